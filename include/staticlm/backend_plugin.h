/* The back-end plug-in ABI, version 1: plain C, so an accelerator vendor (an NPU SDK, an
 * inference engine with a delegate) can run staticlm's fixed-shape subgraphs from a shared
 * object built with any compiler, while staticlm's host does everything else (tokenizer, image
 * preprocessing, masks, RoPE tables, the KV cache, sampling). docs/backends.md has a worked
 * example.
 *
 * A plug-in is a shared object that exports one symbol:
 *
 *   const staticlm_backend_plugin* staticlm_backend_plugin_v1(void);
 *
 * returning a table that lives as long as the shared object is loaded. staticlm checks
 * abi_version == STATICLM_PLUGIN_ABI_VERSION and every struct size the table reports, then
 * creates one instance for a model directory and a profile, reads the signatures (checked
 * against the subgraph contract of the checkpoint and profile: names, dtypes, shapes, dynamic
 * axes) and calls run() for each subgraph call. The subgraphs and their tensors are those of
 * include/staticlm/backend.h, by the same names and in the same order.
 *
 * Ownership:
 *  - Strings and arrays the plug-in returns (signatures, names, error messages) are owned by
 *    the plug-in. Signatures stay valid until destroy(); an error message until the next call
 *    on the same instance (or, for create failures, the next create on the same thread).
 *  - Everything staticlm passes in (model_dir, profile, options, buffers) is borrowed for the
 *    duration of the call only. A plug-in copies what it keeps: it must not hold a buffer's
 *    data pointer after run() returns.
 *  - run() writes every element of every output buffer and never writes an input buffer.
 *
 * Threading: staticlm calls an instance from one thread at a time (never two calls on the same
 * instance at once), but not always from the same thread. Different instances may be used from
 * different threads at once. A plug-in may use its own threads inside a call; they must be
 * done with the buffers when run() returns.
 *
 * Errors: functions that can fail return 0 on success and nonzero on failure; last_error()
 * then gives a one-line message (which staticlm prints after naming the plug-in).
 *
 * Compatibility: a later version of this ABI gets a new entry point name and a new
 * abi_version. Within version 1, struct_size fields let a struct grow at its end: staticlm
 * requires each size reported by the plug-in to be at least the version-1 size it knows.
 */
#ifndef STATICLM_BACKEND_PLUGIN_H_
#define STATICLM_BACKEND_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STATICLM_PLUGIN_ABI_VERSION 1u
#define STATICLM_PLUGIN_ENTRY_POINT "staticlm_backend_plugin_v1"
#define STATICLM_PLUGIN_MAX_RANK 8

/* Element types (values fixed by this ABI). Subgraph activations are F32, ids I64. */
typedef enum staticlm_dtype {
  STATICLM_DTYPE_F32 = 1,
  STATICLM_DTYPE_F16 = 2,
  STATICLM_DTYPE_BF16 = 3,
  STATICLM_DTYPE_I8 = 4,
  STATICLM_DTYPE_U8 = 5,
  STATICLM_DTYPE_I32 = 6,
  STATICLM_DTYPE_I64 = 7,
  STATICLM_DTYPE_BOOL = 8
} staticlm_dtype;

/* How the graphs apply RoPE tables (backend.h RopeSine). */
typedef enum staticlm_rope_sine {
  STATICLM_ROPE_SINE_HF = 0,
  STATICLM_ROPE_SINE_PRE_NEGATED = 1
} staticlm_rope_sine;

/* One tensor of a subgraph signature. A dynamic axis holds its largest extent in dims and
 * may take any extent in [1, dims[dynamic_axis]] at run time (the same in every tensor of a
 * call); -1 when the tensor has none. */
typedef struct staticlm_tensor_spec {
  const char* name;
  int32_t dtype; /* staticlm_dtype */
  int32_t rank;  /* 0..STATICLM_PLUGIN_MAX_RANK */
  int64_t dims[STATICLM_PLUGIN_MAX_RANK];
  int32_t dynamic_axis;
} staticlm_tensor_spec;

typedef struct staticlm_subgraph_signature {
  const char* name;
  size_t num_inputs;
  const staticlm_tensor_spec* inputs; /* in call order */
  size_t num_outputs;
  const staticlm_tensor_spec* outputs; /* in call order */
} staticlm_subgraph_signature;

/* What the graphs are built for (backend.h SubgraphProfile). */
typedef struct staticlm_profile {
  uint32_t struct_size; /* sizeof(staticlm_profile) of the caller */
  int64_t max_seq;
  int32_t rope_sine;        /* staticlm_rope_sine */
  int32_t has_visual_span;  /* 0: no image span (text-only graphs) */
  int64_t visual_start_idx;
  int64_t num_visual_tokens;
  int64_t num_patches;
  int64_t patch_vector_size;
  int64_t patch_grid_height;
  int64_t patch_grid_width;
  size_t num_append_lengths;
  const int64_t* append_lengths; /* buckets Q of decoder_layer_append_q{Q}_{i} */
} staticlm_profile;

/* One key=value of `--backend plugin:PATH.so:key=value,...`; unknown keys are the plug-in's
 * to refuse (create fails with a message naming the key). */
typedef struct staticlm_option {
  const char* key;
  const char* value;
} staticlm_option;

/* A caller-owned tensor buffer for one run() call: dense, row-major, dims as the call's
 * shape (a dynamic axis at its extent for this call). */
typedef struct staticlm_tensor_buffer {
  int32_t dtype; /* staticlm_dtype */
  int32_t rank;
  int64_t dims[STATICLM_PLUGIN_MAX_RANK];
  void* data;         /* inputs: read only */
  uint64_t byte_size; /* bytes at data: the product of dims times the element size */
} staticlm_tensor_buffer;

typedef struct staticlm_backend staticlm_backend; /* an instance; opaque to staticlm */

typedef struct staticlm_backend_plugin {
  uint32_t abi_version; /* STATICLM_PLUGIN_ABI_VERSION */
  uint32_t struct_size; /* sizeof(staticlm_backend_plugin) */
  /* The sizes of the other structs as the plug-in was compiled. */
  uint32_t tensor_spec_size;
  uint32_t signature_size;
  uint32_t profile_size;
  uint32_t tensor_buffer_size;
  const char* name; /* a short name for messages, e.g. "npu-sdk" */

  /* Creates an instance for the checkpoint in model_dir and the profile; options as given
   * on the command line. 0 and *out set on success; nonzero (with last_error(NULL)) when the
   * plug-in cannot run this model or profile, or an option is bad. */
  int (*create)(const char* model_dir, const staticlm_profile* profile, const staticlm_option* options,
                size_t num_options, staticlm_backend** out);

  /* The subgraphs this instance runs, any subset of the contract, each signature exactly as
   * the contract has it. The array lives until destroy(). */
  const staticlm_subgraph_signature* (*signatures)(const staticlm_backend* backend, size_t* count);

  /* Runs one subgraph on caller-owned buffers in signature order. 0 on success; nonzero with
   * last_error(backend) on failure. */
  int (*run)(staticlm_backend* backend, const char* subgraph, const staticlm_tensor_buffer* inputs,
             size_t num_inputs, const staticlm_tensor_buffer* outputs, size_t num_outputs);

  /* The message of the last failed call on backend, or of the last failed create() on this
   * thread when backend is NULL. Never NULL. */
  const char* (*last_error)(const staticlm_backend* backend);

  /* Frees the instance and everything it returned. */
  void (*destroy)(staticlm_backend* backend);
} staticlm_backend_plugin;

/* The entry point every plug-in exports (STATICLM_PLUGIN_ENTRY_POINT). */
typedef const staticlm_backend_plugin* (*staticlm_backend_plugin_entry)(void);

#ifdef __cplusplus
}
#endif

#endif /* STATICLM_BACKEND_PLUGIN_H_ */
