// The pieces of the plug-in loader that need no shared object: --backend parsing, the contract
// check of reported signatures, the C struct conversions, and the compact graph lists the
// messages use.
#include <gtest/gtest.h>

#include "backends/backend_factory.h"
#include "backends/plugin/plugin_abi.h"
#include "backends/plugin/plugin_backend.h"
#include "backends/routed_backend.h"
#include "base/error.h"

namespace staticlm {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(BackendSpec, ParsesCpuAndPluginsWithOptions) {
  EXPECT_FALSE(parse_backend_spec("cpu").plugin);
  const BackendSpec a = parse_backend_spec("plugin:/opt/npu/libx.so");
  EXPECT_TRUE(a.plugin);
  EXPECT_EQ(a.path, "/opt/npu/libx.so");
  EXPECT_TRUE(a.options.empty());
  const BackendSpec b = parse_backend_spec("plugin:./a:b/libx.so:threads=2,device=npu:0");
  EXPECT_EQ(b.path, "./a:b/libx.so");  // a directory and a value may hold ':'
  ASSERT_EQ(b.options.size(), 2u);
  EXPECT_EQ(b.options[1], (std::pair<std::string, std::string>{"device", "npu:0"}));
  EXPECT_EQ(parse_backend_spec("plugin:lib:x.so").path, "lib:x.so");
  const BackendSpec c = parse_backend_spec("plugin:./a:b/libx.so:threads=2,mode=");
  EXPECT_EQ(c.path, "./a:b/libx.so");
  ASSERT_EQ(c.options.size(), 2u);
  EXPECT_EQ(c.options[0], (std::pair<std::string, std::string>{"threads", "2"}));
  EXPECT_EQ(c.options[1], (std::pair<std::string, std::string>{"mode", ""}));
}

TEST(BackendSpec, RefusesBadSpecsByName) {
  EXPECT_NE(error_of([] { parse_backend_spec("npu"); }).find("--backend 'npu': expected cpu or plugin:"), std::string::npos);
  EXPECT_NE(error_of([] { parse_backend_spec("plugin:"); }).find("no plug-in path"), std::string::npos);
  EXPECT_NE(error_of([] { parse_backend_spec("plugin:x.so:a=1,,b=2"); }).find("option '' is not key=value"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_backend_spec("plugin:x.so:=1"); }).find("option '=1'"), std::string::npos);
  EXPECT_NE(error_of([] { check_backend_choice({"cpu", "gpu"}); }).find("--fallback 'gpu'"), std::string::npos);
  EXPECT_NE(error_of([] { check_backend_choice({"cpu", "cpu"}); }).find("--fallback cpu goes with"), std::string::npos);
  EXPECT_NE(error_of([] { check_backend_choice({"plugin:/nonexistent/x.so", "cpu"}); }).find("no such file"),
            std::string::npos);
}

SubgraphSignature head(std::int64_t vocab) {
  return {"lm_head", {{"hidden_states", DType::kF32, Shape{1, 1, 8}, -1}}, {{"logits", DType::kF32, Shape{1, 1, vocab}, -1}}};
}
SubgraphSignature embedding() {
  return {"token_embedding", {{"input_ids", DType::kI64, Shape{1, 16}, 1}}, {{"inputs_embeds", DType::kF32, Shape{1, 16, 8}, 1}}};
}

TEST(ContractCheck, KeepsContractOrderAndRefusesEveryMismatch) {
  const std::vector<SubgraphSignature> contract = {embedding(), head(100)};
  const auto ok = check_against_contract({head(100), embedding()}, contract, "plugin p");
  ASSERT_EQ(ok.size(), 2u);
  EXPECT_EQ(ok[0].name, "token_embedding");
  EXPECT_EQ(check_against_contract({head(100)}, contract, "p").size(), 1u);  // a subset is fine here

  EXPECT_EQ(error_of([&] { check_against_contract({head(101)}, contract, "plugin p"); }),
            "plugin p: subgraph lm_head: output logits: F32 [1, 1, 101], expected F32 [1, 1, 100]");
  SubgraphSignature e = embedding();
  e.inputs[0].dtype = DType::kI32;
  EXPECT_EQ(error_of([&] { check_against_contract({e}, contract, "p"); }),
            "p: subgraph token_embedding: input input_ids: I32 [1, 16] dynamic axis 1, expected I64 [1, 16] dynamic axis 1");
  e = embedding();
  e.outputs[0].dynamic_axis = -1;
  EXPECT_NE(error_of([&] { check_against_contract({e}, contract, "p"); }).find("output inputs_embeds: F32 [1, 16, 8], expected"),
            std::string::npos);
  e = embedding();
  e.inputs[0].name = "ids";
  EXPECT_EQ(error_of([&] { check_against_contract({e}, contract, "p"); }),
            "p: subgraph token_embedding: input 0 is named 'ids', expected 'input_ids'");
  e = embedding();
  e.outputs.push_back(e.outputs[0]);
  EXPECT_EQ(error_of([&] { check_against_contract({e}, contract, "p"); }),
            "p: subgraph token_embedding: 2 outputs, expected 1");
  SubgraphSignature extra = head(100);
  extra.name = "lm_head_fused";
  EXPECT_EQ(error_of([&] { check_against_contract({extra}, contract, "p"); }),
            "p: subgraph lm_head_fused is not in the contract for this checkpoint and profile");
  EXPECT_EQ(error_of([&] { check_against_contract({head(100), head(100)}, contract, "p"); }),
            "p: subgraph lm_head is reported twice");
}

TEST(PluginAbi, StructsRoundTrip) {
  SubgraphProfile p;
  p.max_seq = 300;
  p.rope_sine = RopeSine::kHf;
  p.visual_start_idx = 5;
  p.num_visual_tokens = 264;
  p.num_patches = 2520;
  p.patch_vector_size = 768;
  p.patch_grid_height = 36;
  p.patch_grid_width = 66;
  p.append_lengths = {16, 64};
  const SubgraphProfile q = plugin::profile_from_abi(plugin::abi_profile(p));
  EXPECT_EQ(q.max_seq, 300);
  EXPECT_EQ(q.rope_sine, RopeSine::kHf);
  EXPECT_EQ(q.visual_start_idx, 5);
  EXPECT_EQ(q.patch_grid_width, 66);
  EXPECT_EQ(q.append_lengths, p.append_lengths);
  staticlm_profile small = plugin::abi_profile(p);
  small.struct_size = 8;
  EXPECT_NE(error_of([&] { plugin::profile_from_abi(small); }).find("profile struct_size 8"), std::string::npos);

  const TensorSpec s = embedding().inputs[0];
  const TensorSpec t = plugin::spec_from_abi(plugin::abi_spec(s), "x");
  EXPECT_EQ(t.name, s.name);
  EXPECT_EQ(t.dtype, s.dtype);
  EXPECT_EQ(t.shape, s.shape);
  EXPECT_EQ(t.dynamic_axis, 1);
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool}) {
    EXPECT_EQ(plugin::dtype_from_abi(plugin::abi_dtype(d)), d);
  }
  EXPECT_EQ(plugin::abi_dtype(DType::kI4), 0);

  float data[6] = {};
  staticlm_tensor_buffer b = plugin::abi_buffer(DType::kF32, Shape{2, 3}, data);
  EXPECT_EQ(b.byte_size, 24u);
  EXPECT_EQ(plugin::view_from_abi(b, "in").shape, (Shape{2, 3}));
  b.byte_size = 20;
  EXPECT_EQ(error_of([&] { plugin::view_from_abi(b, "lm_head input 0"); }),
            "lm_head input 0: byte_size 20, expected 24 for [2, 3]");
  b.rank = 9;
  EXPECT_NE(error_of([&] { plugin::view_from_abi(b, "in"); }).find("rank 9"), std::string::npos);
}

TEST(RoutedBackend, FoldsNumberedGraphsInMessages) {
  EXPECT_EQ(compact_graph_list({"token_embedding", "decoder_layer_prefill_0", "decoder_layer_prefill_1",
                                "decoder_layer_prefill_2", "decoder_layer_decode_0", "decoder_layer_append_q16_0",
                                "decoder_layer_append_q16_1", "lm_head"}),
            "token_embedding, decoder_layer_prefill_{0-2}, decoder_layer_decode_0, decoder_layer_append_q16_{0-1}, lm_head");
  EXPECT_EQ(compact_graph_list({"decoder_layer_decode_0", "decoder_layer_decode_2"}),
            "decoder_layer_decode_0, decoder_layer_decode_2");
  EXPECT_EQ(compact_graph_list({}), "");
}

}  // namespace
}  // namespace staticlm
