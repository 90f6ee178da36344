// The Python module `staticlm`: the public C++ API (include/staticlm/) for scripts that sit next
// to the reference toolchain. Tensors come back as NumPy arrays named as `staticlm inputs`
// writes them; every call that computes releases the GIL. Session.generate() is a real iterator:
// a worker thread runs the generation loop and hands each token over through a short queue as
// soon as it is chosen, so a consumer sees tokens while later ones are still being decoded (and
// the worker waits when the consumer falls kMaxQueued tokens behind).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <chrono>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "staticlm/inputs.h"
#include "staticlm/inspect.h"
#include "staticlm/chat.h"
#include "staticlm/model.h"
#include "staticlm/session.h"
#include "staticlm/tokenizer.h"
#include "staticlm/tools.h"

namespace py = pybind11;
namespace api = staticlm::api;

namespace {

// sets={"max_seq": 64, "image_fit": "fit"} (or ["max_seq=64", ...]) -> "key=value" overrides.
std::vector<std::string> set_list(const py::object& sets) {
  std::vector<std::string> out;
  if (sets.is_none()) return out;
  if (py::isinstance<py::dict>(sets)) {
    for (const auto& [k, v] : sets.cast<py::dict>()) {
      // Python's True/False are YAML booleans too; everything else is its str().
      out.push_back(py::str(k).cast<std::string>() + "=" + py::str(v).cast<std::string>());
    }
    return out;
  }
  if (py::isinstance<py::str>(sets)) throw py::type_error("sets: a dict {key: value} or a list of 'key=value'");
  for (const auto& item : sets) out.push_back(py::str(item).cast<std::string>());
  return out;
}

// image=None, "a.png" or ["a.png"] -> files.
// A path given as str or os.PathLike (pathlib.Path); anything else is a TypeError naming `what`.
std::string path_of(const py::handle& value, const char* what) {
  if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__")) {
    return py::module_::import("os").attr("fspath")(value).cast<std::string>();
  }
  throw py::type_error(std::string(what) + ": expected a path (str or os.PathLike) or a list of them, got " +
                       std::string(py::str(value.get_type().attr("__name__"))));
}

std::vector<std::string> image_list(const py::object& image) {
  if (image.is_none()) return {};
  if (py::isinstance<py::str>(image) || py::hasattr(image, "__fspath__")) return {path_of(image, "image")};
  if (!py::isinstance<py::list>(image) && !py::isinstance<py::tuple>(image)) path_of(image, "image");  // throws
  std::vector<std::string> out;
  for (const py::handle& item : image) out.push_back(path_of(item, "image"));
  return out;
}

py::array numpy(const api::HostTensor& t) {
  // A copy NumPy owns (no base object): the HostTensor goes away with the call.
  py::array a(py::dtype(t.dtype), t.shape);
  std::memcpy(a.mutable_data(), t.data.data(), t.data.size());
  return a;
}

py::dict numpy_dict(const std::map<std::string, api::HostTensor>& tensors) {
  py::dict d;
  for (const auto& [name, t] : tensors) d[py::str(name)] = numpy(t);
  return d;
}

api::Prompt make_prompt(const std::optional<std::string>& prompt, const std::optional<std::vector<std::int64_t>>& ids,
                        const py::object& image) {
  api::Prompt p;
  if (prompt) p.text = *prompt;
  if (ids) p.ids = *ids;
  p.images = image_list(image);
  return p;
}

py::dict result_dict(const api::GenerationResult& r) {
  py::dict stats;
  stats["prompt_tokens"] = r.stats.prompt_tokens;
  stats["generated_tokens"] = r.stats.generated_tokens;
  stats["decode_steps"] = r.stats.decode_steps;
  stats["prefill_seconds"] = r.stats.prefill_seconds;
  stats["image_encode_seconds"] = r.stats.image_encode_seconds;
  stats["decode_seconds"] = r.stats.decode_seconds;
  stats["time_to_first_token_seconds"] = r.stats.time_to_first_token_seconds;
  stats["prefill_tokens_per_second"] = r.stats.prefill_tokens_per_second();
  stats["decode_tokens_per_second"] = r.stats.decode_tokens_per_second();
  py::dict d;
  d["tokens"] = r.tokens;
  d["stop_reason"] = r.stop_reason;
  d["message"] = r.message;
  d["text"] = r.text;
  d["stats"] = stats;
  return d;
}

// A Session and whether a generation is using it (one at a time: a Session is single-threaded).
struct PySession {
  std::unique_ptr<api::Session> session;
  std::atomic<bool> busy{false};

  void claim() {
    if (busy.exchange(true)) {
      throw api::Error(api::ErrorCode::kInvalidArgument,
                       "this session is still generating: exhaust or close() the previous generate() first");
    }
  }

  // A step-wise call (prefill, decode) without the GIL, its logits [vocab] as float32.
  template <class F>
  py::array_t<float> logits(F&& step) {
    claim();
    std::vector<float> out;
    try {
      py::gil_scoped_release release;
      out = step();
    } catch (...) {
      busy = false;
      throw;
    }
    busy = false;
    py::array_t<float> a(static_cast<py::ssize_t>(out.size()));
    std::copy(out.begin(), out.end(), a.mutable_data());
    return a;
  }
};

api::SessionOptions session_options(std::int64_t max_seq, int threads, const std::string& config, const py::object& sets,
                                    bool f32_activations, const std::string& backend, const std::string& fallback) {
  api::SessionOptions o;
  o.max_seq = max_seq;
  o.threads = threads;
  o.config_file = config;
  o.sets = set_list(sets);
  o.f32_activations = f32_activations;
  o.backend = backend;
  o.fallback = fallback;
  return o;
}

// json_schema as given: a str is the schema's JSON text, a dict (or list, bool) is dumped with json.dumps.
std::string schema_text(const py::handle& schema) {
  if (schema.is_none()) return "";
  if (py::isinstance<py::str>(schema)) return schema.cast<std::string>();
  return py::module_::import("json").attr("dumps")(schema).cast<std::string>();
}

// The sampling keywords of generate() and Chat.say(), one table for both: each sets its
// GenerateParams field (staticlm/session.h says what each means); None or absent leaves the
// checkpoint's default. logit_bias is {token id: bias} (-inf bans it); json_schema JSON text or
// a dict.
struct SamplingKeyword {
  const char* name;
  void (*set)(api::GenerateParams&, const py::handle&);
};

// Integer fields, optional or not (bool aside).
template <class T>
constexpr bool is_count = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
constexpr bool is_count<std::optional<T>> = is_count<T>;

template <auto Field>
void set_field(api::GenerateParams& p, const py::handle& value) {
  using T = std::remove_reference_t<decltype(p.*Field)>;
  // A None for a field without an unset state (seed, stop, ignore_eos, grammar) keeps its default.
  if (value.is_none()) return;
  // True is an int to Python, not a count or a seed (a flag given to the wrong keyword).
  if constexpr (is_count<T>) {
    if (py::isinstance<py::bool_>(value)) throw py::cast_error();
  }
  p.*Field = value.cast<T>();
}

// seed=-1 draws a random one, as the CLI's --seed -1 and llama.cpp's; below -1 is refused.
void set_seed(api::GenerateParams& p, const py::handle& value) {
  // Any integer (numpy's too: __index__), bool aside.
  if (!value.is_none() && !py::isinstance<py::bool_>(value) && PyIndex_Check(value.ptr())) {
    const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow < 0 || (overflow == 0 && v < -1)) {
      throw py::value_error("seed: " + std::string(py::repr(value)) + " is below -1 (-1: a random seed)");
    }
    if (overflow == 0 && v == -1) {
      p.seed = std::random_device{}();
      return;
    }
  }
  set_field<&api::GenerateParams::seed>(p, value);
}

using P = api::GenerateParams;
constexpr SamplingKeyword kSamplingKeywords[] = {
    {"max_new_tokens", set_field<&P::max_new_tokens>},
    {"temperature", set_field<&P::temperature>},
    {"top_k", set_field<&P::top_k>},
    {"top_p", set_field<&P::top_p>},
    {"min_p", set_field<&P::min_p>},
    {"repetition_penalty", set_field<&P::repetition_penalty>},
    {"seed", set_seed},
    {"stop", set_field<&P::stop>},
    {"presence_penalty", set_field<&P::presence_penalty>},
    {"frequency_penalty", set_field<&P::frequency_penalty>},
    {"logit_bias",
     [](P& p, const py::handle& v) {
       if (v.is_none()) return;
       const auto bias = v.cast<std::map<std::int64_t, float>>();
       p.logit_bias.assign(bias.begin(), bias.end());
     }},
    {"ignore_eos", set_field<&P::ignore_eos>},
    {"json_schema", [](P& p, const py::handle& v) { p.json_schema = schema_text(v); }},
    {"thought_first", set_field<&P::thought_first>},
    {"special", set_field<&P::special>},
    {"grammar", set_field<&P::grammar>},
    {"repeat_last_n", set_field<&P::repeat_last_n>},
    {"top_n_sigma", set_field<&P::top_n_sigma>},
    {"typical_p", set_field<&P::typical_p>},
    {"xtc_probability", set_field<&P::xtc_probability>},
    {"xtc_threshold", set_field<&P::xtc_threshold>},
    {"mirostat", set_field<&P::mirostat>},
    {"mirostat_tau", set_field<&P::mirostat_tau>},
    {"mirostat_eta", set_field<&P::mirostat_eta>},
    {"dry_multiplier", set_field<&P::dry_multiplier>},
    {"dry_base", set_field<&P::dry_base>},
    {"dry_allowed_length", set_field<&P::dry_allowed_length>},
    {"dry_penalty_last_n", set_field<&P::dry_penalty_last_n>},
    {"dry_sequence_breakers", set_field<&P::dry_sequence_breakers>},
    {"dynatemp_range", set_field<&P::dynatemp_range>},
    {"dynatemp_exponent", set_field<&P::dynatemp_exponent>},
    {"samplers", set_field<&P::samplers>},
};

std::string sampling_keyword_names() {
  std::string names;
  for (const SamplingKeyword& k : kSamplingKeywords) names.append(names.empty() ? "" : ", ").append(k.name);
  return names;
}

// The GenerateParams of generate()'s / say()'s keywords. An unknown keyword, or a value of the
// wrong type, is a TypeError naming it.
api::GenerateParams sampling_params(const py::kwargs& kwargs) {
  api::GenerateParams p;
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    const auto* k = std::find_if(std::begin(kSamplingKeywords), std::end(kSamplingKeywords),
                                 [&](const SamplingKeyword& x) { return name == x.name; });
    if (k == std::end(kSamplingKeywords)) {
      throw py::type_error("unexpected keyword argument '" + name + "'; the sampling keywords are " +
                           sampling_keyword_names());
    }
    try {
      k->set(p, value);
    } catch (const py::cast_error&) {
      throw py::type_error(name + ": cannot take " + std::string(py::repr(value)) + " (a " +
                           std::string(py::str(value.get_type().attr("__name__"))) + ")");
    }
  }
  return p;
}

// When to let Python run its signal handlers (PyErr_CheckSignals) during a long call: every
// 100 ms, so that a Ctrl-C is seen within a tenth of a second and costs nothing per token.
class SignalPoll {
 public:
  bool due() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return false;
    last_ = now;
    return true;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// A should_stop for a call made without the GIL on the Python thread (polled before each layer
// of the prompt and after each token): when the poll is due it takes the GIL to let Python run
// its signal handlers, and stops the call on a KeyboardInterrupt (left set for the caller to
// raise once the call returns: `interrupted`), also part-way through a long prompt.
std::function<bool()> signal_check(bool& interrupted) {
  auto poll = std::make_shared<SignalPoll>();
  return [&interrupted, poll] {
    if (!poll->due()) return false;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return false;
    interrupted = true;
    return true;
  };
}

// A chat turn as a dict: the reply (as generate()'s result) and the turn's cache statistics.
py::dict turn_dict(const api::TurnResult& t) {
  py::dict d = result_dict(t.result);
  d["prefilled_tokens"] = t.prefilled_tokens;
  d["reused_tokens"] = t.reused_tokens;
  d["dropped_turns"] = t.dropped_turns;
  d["context_tokens"] = t.context_tokens;
  return d;
}

constexpr std::size_t kMaxQueued = 4;

// The iterator generate() returns. The worker owns the generation; the queue is the only thing
// the two threads share (under the mutex). Dropping or close()-ing the iterator stops the loop
// at the next token (the callback returns false) and joins the worker.
class Generation {
 public:
  Generation(std::shared_ptr<PySession> s, api::Prompt prompt, api::GenerateParams params) : s_(std::move(s)) {
    s_->claim();
    // A close() (a Ctrl-C seen by next(), the iterator dropped) also stops a prompt part-way.
    params.should_stop = [this] {
      std::lock_guard lock(mutex_);
      return cancel_;
    };
    worker_ = std::thread([this, prompt = std::move(prompt), params = std::move(params)] {
      try {
        api::GenerationResult r = s_->session->generate(prompt, params, [this](std::int64_t token, std::string_view) {
          std::unique_lock lock(mutex_);
          space_.wait(lock, [&] { return queue_.size() < kMaxQueued || cancel_; });
          queue_.push_back(token);
          ready_.notify_one();
          return !cancel_;
        });
        std::lock_guard lock(mutex_);
        result_ = std::move(r);
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      done_ = true;
      ready_.notify_one();
    });
  }
  ~Generation() { close(); }

  std::int64_t next() {
    bool was_closed = false;
    // A Ctrl-C while tokens keep coming (list(generate(...)) never waits long): checked every
    // 100 ms here too.
    if (signal_poll_.due() && PyErr_CheckSignals() != 0) {
      close();
      throw py::error_already_set();
    }
    for (;;) {
      {
        py::gil_scoped_release release;  // the worker never needs the GIL; other Python threads may run
        std::unique_lock lock(mutex_);
        // In slices, so that a Ctrl-C (a signal Python handles on this thread) is seen mid-reply.
        ready_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !queue_.empty() || done_ || closed_; });
        if (!queue_.empty() && !closed_) {
          const std::int64_t t = queue_.front();
          queue_.pop_front();
          space_.notify_one();
          return t;
        }
        if (done_ || closed_) {
          was_closed = closed_;
          break;
        }
      }
      if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt: stop the generation, then raise it
        close();
        throw py::error_already_set();
      }
    }
    finish();
    if (error_ && !was_closed) {
      std::exception_ptr e = std::exchange(error_, nullptr);
      std::rethrow_exception(e);
    }
    throw py::stop_iteration();
  }

  // From any thread, any number of times: later next() calls end the iteration.
  void close() {
    {
      std::lock_guard lock(mutex_);
      cancel_ = true;
      closed_ = true;
      queue_.clear();
      space_.notify_one();
      ready_.notify_all();
    }
    finish();
  }

  py::object result() const {
    std::lock_guard lock(mutex_);
    if (!done_ || !result_) return py::none();
    return result_dict(*result_);
  }

 private:
  // Joins the worker and frees the session, once, whichever thread gets here first (next() at
  // the end and close() from another thread both may): without the GIL, so that a thread
  // waiting for it is not blocked by one that joins.
  void finish() {
    py::gil_scoped_release release;
    std::lock_guard lock(finish_mutex_);
    if (worker_.joinable()) worker_.join();
    if (s_) s_->busy = false;
    s_.reset();
  }

  std::shared_ptr<PySession> s_;
  std::thread worker_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;  // a token or the end arrived
  std::condition_variable space_;  // the consumer took a token (or stopped)
  std::deque<std::int64_t> queue_;
  bool done_ = false;
  std::exception_ptr error_;
  std::optional<api::GenerationResult> result_;
  bool cancel_ = false;  // under mutex_
  bool closed_ = false;  // close() was called (under mutex_)
  SignalPoll signal_poll_;  // the Python thread's
  std::mutex finish_mutex_;
};


}  // namespace

PYBIND11_MODULE(staticlm, m) {
  m.doc() = "staticlm: Gemma 4 E2B through fixed-shape subgraphs, with a host runtime (CPU back end)";
  static py::exception<api::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const api::Error& e) {
      // Bad values from the caller are ValueErrors too, so `except ValueError` catches them.
      if (e.code() == api::ErrorCode::kInvalidArgument || e.code() == api::ErrorCode::kOutOfRange) {
        PyErr_SetString(PyExc_ValueError, e.what());
      } else {
        error(e.what());
      }
    }
  });

  py::class_<api::Tokenizer>(m, "Tokenizer", "The checkpoint's tokenizer.json and chat template")
      .def(py::init([](const std::string& dir) {
             py::gil_scoped_release release;
             return api::Tokenizer::open(dir);
           }),
           py::arg("model_dir"))
      .def(
          "encode",
          [](const api::Tokenizer& t, const std::string& text, bool add_special_tokens) {
            py::gil_scoped_release release;
            return t.encode(text, add_special_tokens);
          },
          py::arg("text"), py::arg("add_special_tokens") = false)
      .def(
          "decode",
          [](const api::Tokenizer& t, const std::vector<std::int64_t>& ids, bool skip_special_tokens) {
            py::gil_scoped_release release;
            return t.decode(ids, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def("token_to_id", &api::Tokenizer::token_to_id, py::arg("token"))
      .def_property_readonly("vocab_size", &api::Tokenizer::vocab_size)
      .def(
          "apply_chat_template",
          [](const api::Tokenizer& t, const py::object& messages, bool add_generation_prompt, const py::object& tools,
             const std::string& chat_template, const py::dict& variables) {
            // Messages as transformers takes them (a list of {"role", "content"} dicts) or JSON text.
            const py::object dumps = py::module_::import("json").attr("dumps");
            api::ChatTemplateOptions o;
            o.add_generation_prompt = add_generation_prompt;
            o.template_file = chat_template;
            if (!tools.is_none()) o.tools_json = dumps(tools).cast<std::string>();
            for (const auto& [k, v] : variables) {
              o.vars.push_back(py::str(k).cast<std::string>() + "=" + dumps(v).cast<std::string>());
            }
            const std::string json =
                py::isinstance<py::str>(messages) ? messages.cast<std::string>() : dumps(messages).cast<std::string>();
            py::gil_scoped_release release;
            return t.apply_chat_template(json, o).text;
          },
          py::arg("messages"), py::arg("add_generation_prompt") = true, py::arg("tools") = py::none(),
          py::arg("chat_template") = "", py::arg("variables") = py::dict())
      .def(
          "chat_prompt",
          [](const api::Tokenizer& t, const std::string& prompt, const std::string& chat_template) {
            api::ChatTemplateOptions o;
            o.template_file = chat_template;
            py::gil_scoped_release release;
            return t.chat_prompt(prompt, o);
          },
          py::arg("prompt"), py::arg("chat_template") = "",
          "`prompt` as one user message in the chat template, ending with the model's turn (what `run --chat` prefills)");

  py::class_<Generation>(m, "Generation", "The tokens of one generate() call, as they are produced")
      .def("__iter__", [](Generation& g) -> Generation& { return g; })
      .def("__next__", &Generation::next)
      .def("close", &Generation::close, "stop generating (at the next token) and wait for the worker")
      .def("__enter__", [](Generation& g) -> Generation& { return g; }, py::return_value_policy::reference)
      .def("__exit__", [](Generation& g, const py::args&) { g.close(); }, "close() on leaving a with block")
      .def_property_readonly("result", &Generation::result,
                             "after the last token: {tokens, stop_reason, message, text, stats}; else None");

  // Static: the bindings keep pointers to their docstrings.
  static const std::string keywords = "Sampling keywords (unset or None: the checkpoint's defaults): " +
                                      sampling_keyword_names() + ". seed=-1 draws a random seed.";
  static const std::string generate_doc =
      "An iterator over the generated token ids (prompt text or prompt_ids; image: a file, the text holding "
      "<|image|>). " + keywords;
  static const std::string say_doc =
      "Adds a user turn (an image only with the first, on a vision chat) and returns the reply: {tokens, stop_reason, "
      "message, text, stats, prefilled_tokens, reused_tokens, dropped_turns, context_tokens}. " + keywords;

  py::class_<PySession, std::shared_ptr<PySession>>(m, "Session", "One generation context (KV cache, thread pool)")
      .def(
          "generate",
          [](const std::shared_ptr<PySession>& s, const std::optional<std::string>& prompt,
             const std::optional<std::vector<std::int64_t>>& prompt_ids, const py::object& image,
             const py::kwargs& sampling) {
            const api::GenerateParams p = sampling_params(sampling);
            return std::make_unique<Generation>(s, make_prompt(prompt, prompt_ids, image), p);
          },
          py::arg("prompt") = py::none(), py::arg("prompt_ids") = py::none(), py::arg("image") = py::none(),
          generate_doc.c_str())
      .def(
          "prefill",
          [](PySession& s, const std::optional<std::string>& prompt,
             const std::optional<std::vector<std::int64_t>>& prompt_ids, const py::object& image) {
            const api::Prompt p = make_prompt(prompt, prompt_ids, image);
            return s.logits([&] { return s.session->prefill(p); });
          },
          py::arg("prompt") = py::none(), py::arg("prompt_ids") = py::none(), py::arg("image") = py::none(),
          "Starts over with the prompt; returns the logits after it [vocab] (float32)")
      .def(
          "decode",
          [](PySession& s, std::int64_t token) { return s.logits([&] { return s.session->decode(token); }); },
          py::arg("token"), "Feeds one token; returns the logits it predicts [vocab] (float32)")
      .def_property_readonly("max_seq", [](const PySession& s) { return s.session->max_seq(); })
      .def_property_readonly("past_len", [](const PySession& s) { return s.session->past_len(); });

  py::class_<api::Chat>(m, "Chat", "A multi-turn conversation over one KV cache (Model.chat())")
      .def(
          "say",
          [](api::Chat& c, const std::string& text, const py::object& image, const py::kwargs& sampling) {
            api::GenerateParams p = sampling_params(sampling);
            const std::optional<std::string> path = image.is_none() ? std::nullopt : std::optional(path_of(image, "image"));
            bool interrupted = false;
            p.should_stop = signal_check(interrupted);
            api::TurnResult t;
            {
              py::gil_scoped_release release;
              t = path ? c.say_with_image(text, *path, p) : c.say(text, p);
            }
            if (interrupted) throw py::error_already_set();  // the KeyboardInterrupt
            return turn_dict(t);
          },
          py::arg("text"), py::arg("image") = py::none(),
          say_doc.c_str())
      .def(
          "reset",
          [](api::Chat& c) { c.reset(); },
          "forget every turn (the system prompt stays)")
      .def(
          "save",
          [](const api::Chat& c, const std::string& path) { c.save(path); },
          py::arg("path"), "write the conversation (tokens and filled KV slots) to a file")
      .def(
          "load",
          [](api::Chat& c, const std::string& path) { c.load(path); },
          py::arg("path"),
          "restore a conversation saved for the same checkpoint, max_seq, profile and system prompt")
      .def_property_readonly("turns", &api::Chat::turns)
      .def_property_readonly("context_tokens", &api::Chat::context_tokens)
      .def_property_readonly("past_len", &api::Chat::past_len)
      .def_property_readonly("max_seq", &api::Chat::max_seq);

  py::class_<api::Model>(m, "Model", "A checkpoint directory: config, memory-mapped weights, tokenizer")
      .def(py::init([](const std::string& dir) {
             py::gil_scoped_release release;
             return api::Model::open(dir);
           }),
           py::arg("model_dir"))
      .def(
          "session",
          [](const api::Model& model, std::int64_t max_seq, int threads, const std::string& config,
             const py::object& sets, bool f32_activations, const std::string& backend, const std::string& fallback) {
            const api::SessionOptions o = session_options(max_seq, threads, config, sets, f32_activations, backend, fallback);
            auto s = std::make_shared<PySession>();
            py::gil_scoped_release release;
            s->session = model.session(o);
            return s;
          },
          py::arg("max_seq") = 0, py::arg("threads") = 0, py::arg("config") = "", py::arg("sets") = py::none(),
          py::arg("f32_activations") = false, py::arg("backend") = "cpu", py::arg("fallback") = "none")
      .def(
          "chat",
          [](const api::Model& model, const std::string& system, const std::string& overflow, bool vision,
             std::int64_t max_seq, int threads, const std::string& config, const py::object& sets, bool f32_activations,
             const std::string& backend, const std::string& fallback, bool jinja, const std::string& chat_template,
             const py::object& vars) {
            const api::SessionOptions o = session_options(max_seq, threads, config, sets, f32_activations, backend, fallback);
            api::ChatOptions c;
            c.system = system;
            c.overflow = overflow;
            c.vision = vision;
            c.jinja = jinja;
            c.chat_template = chat_template;
            if (!vars.is_none()) {
              if (py::isinstance<py::str>(vars) || !py::isinstance<py::sequence>(vars)) {
                throw py::type_error("vars: expected a list of 'KEY=JSON' strings, got " +
                                     std::string(py::str(vars.get_type().attr("__name__"))));
              }
              for (const py::handle& v : vars) {
                if (!py::isinstance<py::str>(v)) throw py::type_error("vars: each item is a 'KEY=JSON' string");
                c.vars.push_back(v.cast<std::string>());
              }
            }
            py::gil_scoped_release release;
            return model.chat(o, c);
          },
          py::arg("system") = "", py::arg("overflow") = "", py::arg("vision") = false, py::arg("max_seq") = 0,
          py::arg("threads") = 0, py::arg("config") = "", py::arg("sets") = py::none(), py::arg("f32_activations") = false,
          py::arg("backend") = "cpu", py::arg("fallback") = "none", py::arg("jinja") = false,
          py::arg("chat_template") = "", py::arg("vars") = py::none(),
          "A multi-turn chat whose KV cache carries the history (only each turn's new tokens are prefilled); "
          "jinja / chat_template lay turns out with a Jinja chat template (vars: \"KEY=JSON\" variables)")
      .def_property_readonly("tokenizer", [](const api::Model& m) { return m.tokenizer(); })
      .def_property_readonly("dir", [](const api::Model& m) { return m.info().dir; })
      .def_property_readonly("vocab_size", [](const api::Model& m) { return m.info().vocab_size; })
      .def_property_readonly("num_layers", [](const api::Model& m) { return m.info().num_layers; })
      .def_property_readonly("has_vision", [](const api::Model& m) { return m.info().has_vision; })
      .def_property_readonly("eos_token_ids", [](const api::Model& m) { return m.info().eos_token_ids; });

  m.def(
      "tool_call_grammar",
      [](const py::object& tools, const std::string& tool_choice, bool parallel_tool_calls) {
        return api::tool_call_grammar(schema_text(tools), tool_choice, parallel_tool_calls);
      },
      py::arg("tools"), py::arg("tool_choice") = "required", py::arg("parallel_tool_calls") = true,
      "A GBNF grammar (for generate(grammar=...)) whose texts are Gemma 4 calls of the tools (OpenAI's tool "
      "schemas: a list, or its JSON text): tool_choice \"required\" any of them, a function's name only that one; "
      "exactly one call when parallel_tool_calls is False");
  m.def(
      "parse_tool_calls",
      [](const std::string& text) {
        const api::ParsedReply r = api::parse_tool_calls(text);
        const py::object loads = py::module_::import("json").attr("loads");
        py::list calls;
        for (const api::ParsedToolCall& c : r.tool_calls) {
          py::dict call;
          call["name"] = c.name;
          call["arguments"] = loads(c.arguments_json);
          calls.append(call);
        }
        py::dict out;
        out["text"] = r.text;
        out["tool_calls"] = calls;
        out["reasoning"] = r.reasoning;
        return out;
      },
      py::arg("text"),
      "The Gemma 4 tool calls in a generated text: {\"text\": the rest, \"tool_calls\": [{\"name\", "
      "\"arguments\": dict}], \"reasoning\": the thought channels' text (\"\" without)}; a call that does not "
      "parse stays in the text");
  m.def(
      "build_static_inputs",
      [](const std::string& dir, const std::string& prompt, const py::object& image, const py::object& sets,
         const std::string& config, bool reserve_decode_slot) {
        api::InputOptions o;
        o.config_file = config;
        o.sets = set_list(sets);
        o.reserve_decode_slot = reserve_decode_slot;
        const std::vector<std::string> images = image_list(image);
        std::map<std::string, api::HostTensor> t;
        {
          py::gil_scoped_release release;
          t = api::build_static_inputs(dir, prompt, images, o);
        }
        return numpy_dict(t);
      },
      py::arg("model_dir"), py::arg("prompt"), py::arg("image") = py::none(), py::arg("sets") = py::none(),
      py::arg("config") = "", py::arg("reserve_decode_slot") = false,
      "The fixed-shape inputs of one prompt as NumPy arrays, keyed as `staticlm inputs` writes them: "
      "llm_input_ids, attention_mask (uint8), valid_length, raw_input_ids and, with an image, "
      "pixel_values and image_position_ids");
  m.def(
      "preprocess_image",
      [](const std::string& dir, const std::string& image, const py::object& sets, const std::string& config) {
        api::InputOptions o;
        o.config_file = config;
        o.sets = set_list(sets);
        std::map<std::string, api::HostTensor> t;
        {
          py::gil_scoped_release release;
          t = api::preprocess_image(dir, image, o);
        }
        return numpy_dict(t);
      },
      py::arg("model_dir"), py::arg("image"), py::arg("sets") = py::none(), py::arg("config") = "",
      "pixel_values [1,N,768] and image_position_ids [1,N,2] of one image for the model's vision profile");
  m.def(
      "inspect",
      [](const std::string& dir, const std::optional<std::string>& prompt,
         const std::optional<std::vector<std::int64_t>>& prompt_ids, const py::object& image, const std::string& reference,
         const std::string& steps, std::optional<std::int64_t> decode_steps, std::optional<std::int64_t> gen_steps,
         std::optional<std::int64_t> max_seq, const py::object& sets, const std::string& config, int threads,
         bool f32_activations, const std::string& backend, const std::string& fallback, const std::string& record) {
        api::InspectOptions o;
        o.model_dir = dir;
        o.prompt = prompt;
        if (prompt_ids) o.prompt_ids = *prompt_ids;
        o.images = image_list(image);
        o.reference = reference;
        o.steps = steps;
        o.decode_steps = decode_steps;
        o.gen_steps = gen_steps;
        o.max_seq = max_seq;
        o.sets = set_list(sets);
        o.config_file = config;
        o.threads = threads;
        o.f32_activations = f32_activations;
        o.backend = backend;
        o.fallback = fallback;
        o.record_dir = record;
        api::InspectReport r;
        {
          py::gil_scoped_release release;
          r = api::inspect(o);
        }
        return py::module_::import("json").attr("loads")(r.json);
      },
      py::arg("model_dir"), py::arg("prompt") = py::none(), py::arg("prompt_ids") = py::none(),
      py::arg("image") = py::none(), py::arg("reference") = "dynamic", py::arg("steps") = "1-8",
      py::arg("decode_steps") = py::none(), py::arg("gen_steps") = py::none(), py::arg("max_seq") = py::none(),
      py::arg("sets") = py::none(), py::arg("config") = "", py::arg("threads") = 0, py::arg("f32_activations") = false,
      py::arg("backend") = "cpu", py::arg("fallback") = "none", py::arg("record") = "",
      "The inspector's report as a dict (what `staticlm inspect --report` writes): the static pipeline "
      "against a reference, step by step (the static side on `backend`; `record`: write its subgraph calls "
      "to this new or empty directory)");
  m.attr("__version__") = "0.1.0";
}
