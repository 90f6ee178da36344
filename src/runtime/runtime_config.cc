#include "runtime/runtime_config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/file.h"
#include "runtime/profile_manifest.h"
#include "runtime/valid_mask.h"

namespace staticlm {

namespace {

constexpr const char* kNestedPrefix = "debug.static_gemma4_runtime.";

const std::vector<std::string> kInlineProfileKeys = {
    "name",       "visual_start_idx",    "num_visual_tokens", "max_soft_tokens", "patch_grid_height",
    "patch_grid_width", "patch_size", "pooling_kernel_size", "image_height",      "image_width",
    "tokenizer_add_bos_token"};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  for (const std::string& y : v) {
    if (y == x) return true;
  }
  return false;
}

std::string show(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsNull()) return "null";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// Reads typed values out of one mapping; `origin(key)` says where a key came from.
class Reader {
 public:
  Reader(const YAML::Node& map, std::map<std::string, std::string> origins, std::string fallback)
      : map_(map), origins_(std::move(origins)), fallback_(std::move(fallback)) {}

  std::string where(const std::string& key) const {
    auto it = origins_.find(key);
    return (it != origins_.end() ? it->second : fallback_) + ": " + key;
  }
  bool has(const std::string& key) const { return map_[key].IsDefined() && !map_[key].IsNull(); }
  const YAML::Node node(const std::string& key) const { return map_[key]; }

  std::optional<std::int64_t> integer(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const YAML::Node n = map_[key];
    try {
      if (n.IsScalar()) return n.as<std::int64_t>();
    } catch (const YAML::Exception&) {
    }
    invalid_argument(where(key) + ": expected an integer, got " + show(n));
  }
  std::optional<double> number(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const YAML::Node n = map_[key];
    try {
      if (n.IsScalar()) return n.as<double>();
    } catch (const YAML::Exception&) {
    }
    invalid_argument(where(key) + ": expected a number, got " + show(n));
  }
  std::optional<bool> boolean(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const YAML::Node n = map_[key];
    try {
      if (n.IsScalar()) return n.as<bool>();
    } catch (const YAML::Exception&) {
    }
    invalid_argument(where(key) + ": expected true or false, got " + show(n));
  }
  std::optional<std::string> string(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const YAML::Node n = map_[key];
    if (!n.IsScalar()) invalid_argument(where(key) + ": expected a string, got " + show(n));
    return n.Scalar();
  }
  std::string choice(const std::string& key, const std::vector<std::string>& allowed, const std::string& dflt) const {
    const auto v = string(key);
    if (!v) return dflt;
    if (!contains(allowed, *v)) invalid_argument(where(key) + ": '" + *v + "' is not one of: " + join(allowed));
    return *v;
  }

 private:
  YAML::Node map_;
  std::map<std::string, std::string> origins_;
  std::string fallback_;
};

// The config mapping inside a parsed document: the root, or TICO's debug.static_gemma4_runtime.
YAML::Node config_block(const YAML::Node& root, const std::string& source) {
  if (!root.IsDefined() || root.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) invalid_file(source + ": a runtime config must be a mapping of keys to values");
  if (root["debug"].IsDefined()) {
    const YAML::Node debug = root["debug"];
    if (root.size() != 1 || !debug.IsMap() || !debug["static_gemma4_runtime"].IsDefined() || debug.size() != 1) {
      invalid_file(source + ": a nested config must hold exactly debug.static_gemma4_runtime (as TICO's " +
                   "static_gemma4_runtime.yaml does)");
    }
    const YAML::Node block = debug["static_gemma4_runtime"];
    if (block.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!block.IsMap()) invalid_file(source + ": debug.static_gemma4_runtime must be a mapping");
    return YAML::Clone(block);
  }
  return YAML::Clone(root);
}

// A mapping may not name a key twice: yaml-cpp keeps the first value, PyYAML (which the
// reference reads these files with) the last; refused rather than silently read either way.
// Aliases make the tree a graph walked once per path: the visits are counted and bounded, so a
// "billion laughs" file is refused instead of walked for ever; and the depth, because an alias
// inside its own anchor (`a: &a [*a]`) makes a cycle (its walk overflowed the stack).
constexpr std::int64_t kMaxYamlNodeVisits = 100000;
constexpr int kMaxYamlDepth = 64;

void check_unique_keys(const YAML::Node& node, const std::string& source, std::int64_t& visits, int depth = 0) {
  if (++visits > kMaxYamlNodeVisits) {
    invalid_file(source + ": more than " + std::to_string(kMaxYamlNodeVisits) +
                 " YAML nodes (aliases counted each time they are used)");
  }
  if (depth > kMaxYamlDepth) {
    invalid_file(source + ": nested more than " + std::to_string(kMaxYamlDepth) +
                 " levels deep (or an alias inside its own anchor)");
  }
  if (node.IsSequence()) {
    for (const YAML::Node& x : node) check_unique_keys(x, source, visits, depth + 1);
  } else if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& kv : node) {
      if (kv.first.IsScalar() && !seen.insert(kv.first.Scalar()).second) {
        invalid_file(source + ": key '" + kv.first.Scalar() + "' given twice (line " +
                     std::to_string(kv.first.Mark().line + 1) + ")");
      }
      check_unique_keys(kv.first, source, visits, depth + 1);
      check_unique_keys(kv.second, source, visits, depth + 1);
    }
  }
}

// Records where each document starts; the nodes themselves are built by YAML::Load.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<std::size_t> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(static_cast<std::size_t>(mark.pos)); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// A runtime config is one document. yaml-cpp's LoadAll never returns on a stray ',' at the
// top ("," alone): each call yields an empty document without moving on, until memory runs
// out. So documents are walked one at a time, and one starting where the last one did is that
// stray character.
void check_one_document(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts h;
  while (h.starts.size() < 3 && parser.HandleNextDocument(h)) {
    const std::size_t n = h.starts.size();
    if (n >= 2 && h.starts[n - 1] == h.starts[n - 2]) {
      const std::size_t pos = h.starts[n - 1];
      const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(std::min(pos, text.size())), '\n'));
      invalid_file(source + ": not valid YAML (no document can start with '" +
                   (pos < text.size() ? std::string(1, text[pos]) : std::string()) + "', line " + std::to_string(line) + ")");
    }
  }
  if (h.starts.size() > 1) invalid_file(source + ": more than one YAML document; a runtime config is one");
}

// Runtime configs are a few KB; yaml-cpp holds ~500 bytes per byte of a flow list, so a 4 MB
// file took 2 GB.
constexpr std::size_t kMaxRuntimeConfigBytes = std::size_t{1} << 20;

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  if (text.size() > kMaxRuntimeConfigBytes) {
    invalid_file(source + ": " + std::to_string(text.size()) + " bytes; a runtime config may have at most " +
                 std::to_string(kMaxRuntimeConfigBytes) + " (the limit)");
  }
  try {
    check_one_document(text, source);
    YAML::Node root = YAML::Load(text);
    std::int64_t visits = 0;
    check_unique_keys(root, source, visits);
    return root;
  } catch (const YAML::Exception& e) {
    invalid_file(source + ": not valid YAML (" + e.msg + ", line " + std::to_string(e.mark.line + 1) + ")");
  }
}

// An override value is parsed as a YAML scalar, or as a flow collection when it starts with '{'
// or '['; any other text (e.g. a prompt holding ": ") stays the string it is.
YAML::Node parse_override_value(const std::string& value) {
  try {
    YAML::Node n = YAML::Load(value);
    const bool flow = !value.empty() && (value[0] == '{' || value[0] == '[');
    if (n.IsDefined() && (n.IsScalar() || n.IsNull() || flow)) return n;
  } catch (const YAML::Exception&) {
  }
  return YAML::Node(value);
}

// --set inspect.thresholds.STEP.METRIC=VALUE: one leaf of the inspect mapping.
void set_inspect_override(YAML::Node& block, const std::string& where, const std::string& sub, const YAML::Node& value) {
  const auto a = sub.find('.'), b = a == std::string::npos ? a : sub.find('.', a + 1);
  if (sub.substr(0, a) != "thresholds" || b == std::string::npos || b == a + 1 || b + 1 >= sub.size() ||
      sub.find('.', b + 1) != std::string::npos) {
    invalid_argument(where + ": expected inspect.thresholds.STEP.METRIC=VALUE");
  }
  YAML::Node inspect = block["inspect"];
  if (inspect.IsDefined() && !inspect.IsNull() && !inspect.IsMap()) invalid_argument(where + ": inspect is not a mapping");
  block["inspect"]["thresholds"][sub.substr(a + 1, b - a - 1)][sub.substr(b + 1)] = value;
}

void apply_override(YAML::Node& block, std::map<std::string, std::string>& origins, const std::string& given) {
  // "--profile V" is the CLI's dedicated flag for vision_profile=V; errors name it as typed.
  const bool profile_flag = given.rfind(kProfileFlag, 0) == 0;
  const std::string text = profile_flag ? "vision_profile=" + given.substr(kProfileFlag.size()) : given;
  const std::string where = profile_flag ? given : "--set " + text;
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) invalid_argument(where + ": expected KEY=VALUE");
  std::string key = text.substr(0, eq);
  const YAML::Node value = parse_override_value(text.substr(eq + 1));
  if (key.rfind(kNestedPrefix, 0) == 0) key = key.substr(std::string(kNestedPrefix).size());
  const auto dot = key.find('.');
  const std::string top = key.substr(0, dot);
  if (!contains(runtime_config_keys(), top)) {
    invalid_argument(where + ": unknown key '" + top + "'; known keys: " + join(runtime_config_keys()));
  }
  origins[top] = where;
  if (dot == std::string::npos) {
    block[top] = value;
    return;
  }
  const std::string sub = key.substr(dot + 1);
  if (top == "inspect") return set_inspect_override(block, where, sub, value);
  // Otherwise only an inline vision profile has sub-keys.
  if (top != "vision_profile") invalid_argument(where + ": key '" + top + "' has no fields");
  if (!contains(kInlineProfileKeys, sub)) {
    invalid_argument(where + ": unknown vision_profile field '" + sub + "'; inline profile fields: " + join(kInlineProfileKeys));
  }
  const YAML::Node current = block["vision_profile"];
  if (!current.IsDefined() || current.IsNull() || current.IsScalar()) {
    // A field of a registered profile (the default when none is set): start an inline profile
    // from all of that profile's fields, then change the one given.
    const std::string name = current.IsDefined() && current.IsScalar() ? current.Scalar() : kDefaultVisionProfile;
    if (!is_registered_vision_profile(name)) {
      invalid_argument(where + ": vision_profile is " + show(current) + "; a field can be set on a registered or an " +
                       "inline profile only");
    }
    const VisionProfile& p = registered_vision_profile(name);
    YAML::Node fields(YAML::NodeType::Map);
    fields["name"] = "custom";
    fields["visual_start_idx"] = p.visual_start_idx;
    fields["num_visual_tokens"] = p.num_visual_tokens;
    fields["max_soft_tokens"] = p.max_soft_tokens;
    fields["patch_grid_height"] = p.patch_grid_height;
    fields["patch_grid_width"] = p.patch_grid_width;
    fields["patch_size"] = p.patch_size;
    fields["pooling_kernel_size"] = p.pooling_kernel_size;
    fields["tokenizer_add_bos_token"] = p.tokenizer_add_bos_token;
    block["vision_profile"] = fields;
  } else if (!current.IsMap()) {
    invalid_argument(where + ": vision_profile is " + show(current) + ", not a profile name or an inline profile");
  }
  block["vision_profile"][sub] = value;
}

ProfileSource read_profile_source(const Reader& r, const std::string& base_dir) {
  ProfileSource src;
  if (!r.has("vision_profile")) return src;
  const YAML::Node n = r.node("vision_profile");
  if (n.IsScalar()) {
    const std::string v = n.Scalar();
    if (v.size() > 5 && v.compare(v.size() - 5, 5, ".json") == 0) {
      src.kind = ProfileSource::Kind::kManifest;
      src.name = (base_dir.empty() || std::filesystem::path(v).is_absolute()) ? v : path_join(base_dir, v);
    } else {
      try {
        registered_vision_profile(v);  // refuses an unknown name, listing the registered ones
      } catch (const Error& e) {
        invalid_argument(r.where("vision_profile") + ": " + e.what());
      }
      src.name = v;
    }
    return src;
  }
  if (!n.IsMap()) invalid_argument(r.where("vision_profile") + ": expected a profile name, a .json manifest or a mapping");
  std::map<std::string, std::string> origins;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (!contains(kInlineProfileKeys, k)) {
      invalid_argument(r.where("vision_profile") + ": unknown inline profile field '" + k + "'; fields: " +
                       join(kInlineProfileKeys));
    }
  }
  const Reader sub(n, {}, r.where("vision_profile"));
  src.kind = ProfileSource::Kind::kInline;
  InlineVisionProfile& f = src.inline_fields;
  if (auto name = sub.string("name")) f.name = *name;
  src.name = f.name;
  f.visual_start_idx = sub.integer("visual_start_idx");
  f.num_visual_tokens = sub.integer("num_visual_tokens");
  f.max_soft_tokens = sub.integer("max_soft_tokens");
  f.patch_grid_height = sub.integer("patch_grid_height");
  f.patch_grid_width = sub.integer("patch_grid_width");
  f.patch_size = sub.integer("patch_size");
  f.pooling_kernel_size = sub.integer("pooling_kernel_size");
  f.image_height = sub.integer("image_height");
  f.image_width = sub.integer("image_width");
  if (auto b = sub.boolean("tokenizer_add_bos_token")) f.tokenizer_add_bos_token = *b;
  return src;
}

// inspect: {thresholds: {STEP: {METRIC: number}}} -> {"STEP.METRIC": number}.
std::map<std::string, double> read_inspect(const YAML::Node& n, const std::string& where) {
  std::map<std::string, double> out;
  if (!n.IsMap()) invalid_argument(where + ": expected a mapping with 'thresholds'");
  for (const auto& kv : n) {
    if (kv.first.as<std::string>() != "thresholds") {
      invalid_argument(where + ": unknown field '" + kv.first.as<std::string>() + "'; fields: thresholds");
    }
  }
  const YAML::Node t = n["thresholds"];
  if (t.IsNull()) return out;
  if (!t.IsMap()) invalid_argument(where + ".thresholds: expected a mapping of steps");
  for (const auto& step : t) {
    const std::string s = step.first.as<std::string>();
    if (!step.second.IsMap()) invalid_argument(where + ".thresholds." + s + ": expected a mapping of metrics to numbers");
    for (const auto& metric : step.second) {
      const std::string m = metric.first.as<std::string>();
      double v = 0;
      try {
        if (!metric.second.IsScalar()) throw YAML::Exception(YAML::Mark::null_mark(), "");
        v = metric.second.as<double>();
      } catch (const YAML::Exception&) {
        invalid_argument(where + ".thresholds." + s + "." + m + ": expected a number, got " + show(metric.second));
      }
      out[s + "." + m] = v;
    }
  }
  return out;
}

RuntimeConfig read_config(const YAML::Node& block, const std::map<std::string, std::string>& origins,
                          const std::string& source, const std::string& base_dir) {
  for (const auto& kv : block) {
    const std::string key = kv.first.as<std::string>();
    if (!contains(runtime_config_keys(), key)) {
      auto it = origins.find(key);
      invalid_argument((it != origins.end() ? it->second : source) + ": unknown key '" + key +
                       "'; known keys: " + join(runtime_config_keys()));
    }
  }
  const Reader r(block, origins, source);
  RuntimeConfig c;
  if (auto v = r.string("model")) c.model = *v;
  if (auto v = r.integer("max_seq")) c.max_seq = *v;
  if (c.max_seq <= 0) invalid_argument(r.where("max_seq") + ": " + std::to_string(c.max_seq) + " must be positive");
  c.vision_profile = read_profile_source(r, base_dir);
  const std::pair<const char*, std::optional<std::int64_t>*> legacy[] = {{"image_height", &c.image_height},
                                                                        {"image_width", &c.image_width},
                                                                        {"visual_start_idx", &c.visual_start_idx},
                                                                        {"num_visual_tokens", &c.num_visual_tokens}};
  for (const auto& [key, field] : legacy) *field = r.integer(key);
  if (auto v = r.string("padding_side")) c.padding_side = *v;
  check_padding_side(c.padding_side, r.where("padding_side"));
  if (auto v = r.string("device")) c.device = *v;
  if (auto v = r.string("prompt")) c.prompt = *v;
  if (auto v = r.integer("verify_steps")) c.verify_steps = *v;
  if (auto v = r.integer("gen_steps")) c.gen_steps = *v;
  if (c.verify_steps < 0) invalid_argument(r.where("verify_steps") + ": " + std::to_string(c.verify_steps) + " must be >= 0");
  if (c.gen_steps < 0) invalid_argument(r.where("gen_steps") + ": " + std::to_string(c.gen_steps) + " must be >= 0");
  if (auto v = r.number("mask_fill_value")) c.mask_fill_value = *v;
  if (!std::isfinite(c.mask_fill_value) || c.mask_fill_value >= 0) {
    std::ostringstream s;
    s << c.mask_fill_value;
    invalid_argument(r.where("mask_fill_value") + ": " + s.str() + " must be a finite negative number (e.g. -120.0)");
  }
  const std::vector<std::string> ropes = {"hf", "pre_negated_sin"};
  const std::string rope = r.choice("rope_sine", ropes, "pre_negated_sin");
  if (r.has("rope")) {
    const std::string tico = r.choice("rope", ropes, rope);
    if (r.has("rope_sine") && tico != rope) {
      invalid_argument(r.where("rope") + ": '" + tico + "' conflicts with rope_sine '" + rope + "'");
    }
    c.rope_sine = tico == "hf" ? RopeSine::kHf : RopeSine::kPreNegatedSin;
  } else {
    c.rope_sine = rope == "hf" ? RopeSine::kHf : RopeSine::kPreNegatedSin;
  }
  c.image_fit = r.choice("image_fit", {"strict", "fit"}, "strict") == "fit" ? ImageFit::kFit : ImageFit::kStrict;
  if (r.has("inspect")) c.inspect_thresholds = read_inspect(r.node("inspect"), r.where("inspect"));
  if (r.has("prefill_buckets")) {
    const YAML::Node n = r.node("prefill_buckets");
    std::vector<std::int64_t> q;
    try {
      if (n.IsScalar()) {
        q.push_back(n.as<std::int64_t>());
      } else if (n.IsSequence()) {
        for (const auto& x : n) q.push_back(x.as<std::int64_t>());
      } else {
        throw YAML::Exception(YAML::Mark::null_mark(), "");
      }
    } catch (const YAML::Exception&) {
      invalid_argument(r.where("prefill_buckets") + ": expected a list of integers, got " + show(n));
    }
    if (q.empty()) invalid_argument(r.where("prefill_buckets") + ": the list is empty");
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i] < 1 || (i > 0 && q[i] <= q[i - 1])) {
        invalid_argument(r.where("prefill_buckets") + ": " + std::to_string(q[i]) +
                         " must be positive and larger than the one before (the list is strictly increasing)");
      }
    }
    c.prefill_buckets = q;
  }
  c.context_overflow = r.choice("context_overflow", {"error", "truncate"}, "error");
  return c;
}

}  // namespace

const char* rope_sine_name(RopeSine r) { return r == RopeSine::kHf ? "hf" : "pre_negated_sin"; }
const char* image_fit_name(ImageFit f) { return f == ImageFit::kFit ? "fit" : "strict"; }

std::string ProfileSource::describe() const {
  switch (kind) {
    case Kind::kRegistered: return "vision profile '" + name + "'";
    case Kind::kManifest: return "vision profile manifest " + name;
    case Kind::kInline: return "inline vision profile '" + name + "'";
  }
  return name;
}

const std::vector<std::string>& runtime_config_keys() {
  static const std::vector<std::string> keys = {
      "model",      "max_seq",      "vision_profile", "image_height",    "image_width", "visual_start_idx",
      "num_visual_tokens", "padding_side", "device",   "prompt",          "verify_steps", "gen_steps",
      "mask_fill_value", "rope_sine", "rope",          "image_fit",   "inspect",
      "prefill_buckets", "context_overflow"};
  return keys;
}

RuntimeConfig parse_runtime_config(const std::string& yaml_text, const std::string& source,
                                   const std::vector<std::string>& overrides, const std::string& base_dir) {
  // Every yaml-cpp exception ends here as a refusal of the file: the readers name the field
  // where they can, and an odd shape they do not foresee (a null or complex key, say) must not
  // surface as an internal error (a fuzzer found `? ? `).
  try {
    YAML::Node block = config_block(parse_yaml(yaml_text, source), source);
    std::map<std::string, std::string> origins;
    for (const std::string& o : overrides) apply_override(block, origins, o);
    return read_config(block, origins, source, base_dir);
  } catch (const YAML::Exception& e) {
    invalid_file(source + ": not a runtime config the reader understands (" + e.msg + ")");
  }
}

RuntimeConfig load_runtime_config(const std::optional<std::string>& path, const std::vector<std::string>& overrides) {
  if (!path) return parse_runtime_config("", "runtime config", overrides);
  const std::string dir = std::filesystem::path(*path).parent_path().string();
  return parse_runtime_config(read_file(*path), *path, overrides, dir);
}

std::string runtime_config_to_yaml(const RuntimeConfig& c) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "model" << YAML::Value << c.model;
  e << YAML::Key << "max_seq" << YAML::Value << c.max_seq;
  e << YAML::Key << "vision_profile" << YAML::Value;
  if (c.vision_profile.kind == ProfileSource::Kind::kInline) {
    const InlineVisionProfile& f = c.vision_profile.inline_fields;
    e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << f.name;
    const std::pair<const char*, const std::optional<std::int64_t>*> fields[] = {
        {"visual_start_idx", &f.visual_start_idx}, {"num_visual_tokens", &f.num_visual_tokens},
        {"max_soft_tokens", &f.max_soft_tokens},   {"patch_grid_height", &f.patch_grid_height},
        {"patch_grid_width", &f.patch_grid_width}, {"patch_size", &f.patch_size},
        {"pooling_kernel_size", &f.pooling_kernel_size}, {"image_height", &f.image_height},
        {"image_width", &f.image_width}};
    for (const auto& [k, v] : fields) {
      if (*v) e << YAML::Key << k << YAML::Value << **v;
    }
    e << YAML::Key << "tokenizer_add_bos_token" << YAML::Value << f.tokenizer_add_bos_token << YAML::EndMap;
  } else {
    e << c.vision_profile.name;
  }
  const std::pair<const char*, const std::optional<std::int64_t>*> legacy[] = {{"image_height", &c.image_height},
                                                                              {"image_width", &c.image_width},
                                                                              {"visual_start_idx", &c.visual_start_idx},
                                                                              {"num_visual_tokens", &c.num_visual_tokens}};
  for (const auto& [k, v] : legacy) {
    if (*v) e << YAML::Key << k << YAML::Value << **v;
  }
  e << YAML::Key << "padding_side" << YAML::Value << c.padding_side;
  e << YAML::Key << "device" << YAML::Value << c.device;
  e << YAML::Key << "prompt" << YAML::Value << YAML::DoubleQuoted << c.prompt;
  e << YAML::Key << "verify_steps" << YAML::Value << c.verify_steps;
  e << YAML::Key << "gen_steps" << YAML::Value << c.gen_steps;
  e << YAML::Key << "mask_fill_value" << YAML::Value << c.mask_fill_value;
  e << YAML::Key << "rope_sine" << YAML::Value << rope_sine_name(c.rope_sine);
  e << YAML::Key << "image_fit" << YAML::Value << image_fit_name(c.image_fit);
  if (c.prefill_buckets) e << YAML::Key << "prefill_buckets" << YAML::Value << YAML::Flow << *c.prefill_buckets;
  e << YAML::Key << "context_overflow" << YAML::Value << c.context_overflow;
  if (!c.inspect_thresholds.empty()) {
    // "STEP.METRIC" keys back into inspect.thresholds.STEP.METRIC (the map is sorted by step).
    e << YAML::Key << "inspect" << YAML::Value << YAML::BeginMap << YAML::Key << "thresholds" << YAML::Value
      << YAML::BeginMap;
    std::string open;
    for (const auto& [key, v] : c.inspect_thresholds) {
      const std::string step = key.substr(0, key.find('.')), metric = key.substr(key.find('.') + 1);
      if (step != open) {
        if (!open.empty()) e << YAML::EndMap;
        e << YAML::Key << step << YAML::Value << YAML::BeginMap;
        open = step;
      }
      e << YAML::Key << metric << YAML::Value << v;
    }
    e << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

std::vector<std::int64_t> append_buckets_for(const RuntimeConfig& c, std::int64_t max_seq) {
  if (c.prefill_buckets) {
    for (std::int64_t q : *c.prefill_buckets) {
      if (q > max_seq - 1) {
        invalid_argument("prefill_buckets: " + std::to_string(q) + " does not fit max_seq " + std::to_string(max_seq) +
                         " (a bucket holds at most max_seq - 1 = " + std::to_string(max_seq - 1) + " tokens)");
      }
    }
    return *c.prefill_buckets;
  }
  std::vector<std::int64_t> out;
  for (std::int64_t q : kDefaultPrefillBuckets) {
    if (q <= max_seq - 1) out.push_back(q);
  }
  return out;
}

StaticSetup resolve_static_setup(const RuntimeConfig& c, const VisionConfig* vision) {
  StaticSetup s;
  const ProfileSource& src = c.vision_profile;
  switch (src.kind) {
    case ProfileSource::Kind::kRegistered: s.profile = registered_vision_profile(src.name); break;
    case ProfileSource::Kind::kManifest: s.profile = load_vision_profile_manifest(src.name); break;
    case ProfileSource::Kind::kInline: s.profile = build_inline_vision_profile(src.inline_fields, c.max_seq, vision); break;
  }
  s.profile.validate_for_model(c.max_seq, vision);
  const std::pair<const char*, std::int64_t> expected[] = {{"image_height", s.profile.image_height()},
                                                          {"image_width", s.profile.image_width()},
                                                          {"visual_start_idx", s.profile.visual_start_idx},
                                                          {"num_visual_tokens", s.profile.num_visual_tokens}};
  const std::optional<std::int64_t>* configured[] = {&c.image_height, &c.image_width, &c.visual_start_idx,
                                                      &c.num_visual_tokens};
  for (int i = 0; i < 4; ++i) {
    if (*configured[i] && **configured[i] != expected[i].second) {
      invalid_argument(std::string("runtime config ") + expected[i].first + " conflicts with vision profile '" +
                       s.profile.name + "': configured=" + std::to_string(**configured[i]) +
                       ", expected=" + std::to_string(expected[i].second));
    }
  }
  s.layout = s.profile.layout(c.max_seq);
  s.layout.validate();
  return s;
}

}  // namespace staticlm
