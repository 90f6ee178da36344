/* A plug-in in plain C with one defect chosen at build time (tests/plugins/CMakeLists.txt):
 * DEFECT_WRONG_VERSION reports ABI version 99, DEFECT_WRONG_SIZE a struct_size too small for
 * version 1, DEFECT_NO_ENTRY exports its table under another name. Each must be refused at
 * load, before create() is called (create fails loudly if it is). */
#include "staticlm/backend_plugin.h"

static const char* last_error(const staticlm_backend* backend) {
  (void)backend;
  return "this test plug-in must never be created";
}

static int create(const char* model_dir, const staticlm_profile* profile, const staticlm_option* options,
                  size_t num_options, staticlm_backend** out) {
  (void)model_dir, (void)profile, (void)options, (void)num_options, (void)out;
  return 1;
}

static const staticlm_subgraph_signature* signatures(const staticlm_backend* backend, size_t* count) {
  (void)backend;
  *count = 0;
  return 0;
}

static int run(staticlm_backend* backend, const char* subgraph, const staticlm_tensor_buffer* inputs,
               size_t num_inputs, const staticlm_tensor_buffer* outputs, size_t num_outputs) {
  (void)backend, (void)subgraph, (void)inputs, (void)num_inputs, (void)outputs, (void)num_outputs;
  return 1;
}

static void destroy(staticlm_backend* backend) { (void)backend; }

static const staticlm_backend_plugin kTable = {
#ifdef DEFECT_WRONG_VERSION
    99u,
#else
    STATICLM_PLUGIN_ABI_VERSION,
#endif
#ifdef DEFECT_WRONG_SIZE
    8u,
#else
    sizeof(staticlm_backend_plugin),
#endif
    sizeof(staticlm_tensor_spec), sizeof(staticlm_subgraph_signature), sizeof(staticlm_profile),
    sizeof(staticlm_tensor_buffer), "bad-table", create, signatures, run, last_error, destroy};

#ifdef DEFECT_NO_ENTRY
const staticlm_backend_plugin* staticlm_backend_plugin_v0(void) { return &kTable; }
#else
const staticlm_backend_plugin* staticlm_backend_plugin_v1(void) { return &kTable; }
#endif
