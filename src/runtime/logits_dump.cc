#include "runtime/logits_dump.h"

#include <algorithm>

#include "base/error.h"
#include "tensor/safetensors.h"

namespace staticlm {

void write_logits_dump(const std::string& path, const LogitsDump& d) {
  const std::int64_t v = static_cast<std::int64_t>(d.prefill_logits.size());
  const std::int64_t n = static_cast<std::int64_t>(d.tokens.size());
  if (v == 0 || n == 0 || static_cast<std::int64_t>(d.decode_logits.size()) != (n - 1) * v) {
    invalid_argument("logits dump: " + std::to_string(n) + " tokens need " + std::to_string(n - 1) + " x " +
                     std::to_string(v) + " decode logits, got " + std::to_string(d.decode_logits.size()) + " values");
  }
  SafetensorsWriter w;
  w.add("prefill_logits", TensorView{DType::kF32, Shape{v}, d.prefill_logits.data()});
  w.add("decode_logits", TensorView{DType::kF32, Shape{n - 1, v}, d.decode_logits.data()});
  w.add("tokens", TensorView{DType::kI64, Shape{n}, d.tokens.data()});
  if (!d.vision_embeds.empty()) {
    const std::int64_t rows = d.vision_rows, size = static_cast<std::int64_t>(d.vision_embeds.size());
    if (rows <= 0 || size % rows != 0) {
      invalid_argument("logits dump: " + std::to_string(size) + " vision_embeds values do not fill " +
                       std::to_string(rows) + " rows");
    }
    w.add("vision_embeds", TensorView{DType::kF32, Shape{rows, size / rows}, d.vision_embeds.data()});
  }
  w.add_metadata("producer", "staticlm");
  w.write(path);
}

LogitsDump read_logits_dump(const std::string& path) {
  const auto f = SafetensorsFile::open(path);
  auto get = [&](const char* name, DType dtype, int rank) {
    if (!f->contains(name)) invalid_file(path + ": no tensor " + name);
    const TensorView t = f->get(name);
    if (t.dtype != dtype || t.shape.rank() != rank) {
      invalid_file(path + ": tensor " + name + " is " + dtype_name(t.dtype) + " " + t.shape.to_string() +
                   ", expected " + dtype_name(dtype) + " of rank " + std::to_string(rank));
    }
    return t;
  };
  const TensorView p = get("prefill_logits", DType::kF32, 1);
  const TensorView dl = get("decode_logits", DType::kF32, 2);
  const TensorView tk = get("tokens", DType::kI64, 1);
  if (dl.shape[1] != p.shape[0] || dl.shape[0] != tk.shape[0] - 1) {
    invalid_file(path + ": decode_logits " + dl.shape.to_string() + " does not fit prefill_logits " +
                 p.shape.to_string() + " and tokens " + tk.shape.to_string() + " (expected [n-1, V])");
  }
  // Copies first: a tensor inside a safetensors file need not be aligned for typed access.
  const Tensor pc = Tensor::copy_of(p), dc = Tensor::copy_of(dl), tc = Tensor::copy_of(tk);
  LogitsDump d;
  const auto pf = pc.as<float>(), df = dc.as<float>();
  const auto ti = tc.as<std::int64_t>();
  d.prefill_logits.assign(pf.begin(), pf.end());
  d.decode_logits.assign(df.begin(), df.end());
  d.tokens.assign(ti.begin(), ti.end());
  if (f->contains("vision_embeds")) {
    const Tensor vc = Tensor::copy_of(get("vision_embeds", DType::kF32, 2));
    const auto vf = vc.as<float>();
    d.vision_embeds.assign(vf.begin(), vf.end());
    d.vision_rows = vc.shape()[0];
  }
  return d;
}

}  // namespace staticlm
