/* staticlm's C API: a stable C interface to the runtime (libstaticlm.so, pkg-config staticlm).
 *
 * Conventions:
 * - Handles are opaque. Every *_create / *_open has a *_free; a handle is valid from its
 *   create until its free. A null, freed or never-created handle is refused with
 *   STATICLM_ERROR_INVALID_HANDLE (the library keeps a registry of live handles; a freed address
 *   that a later create reuses is, of course, live again).
 * - Every function that can fail returns a staticlm_status; on failure staticlm_last_error()
 *   gives a one-line UTF-8 message naming the value, file or argument. Nothing aborts on bad input.
 * - Strings are UTF-8 and NUL-terminated. Output buffers belong to the caller, with their
 *   capacity given; when one is too small the call returns STATICLM_ERROR_BUFFER_TOO_SMALL and
 *   sets the *_needed count, so the caller can grow it and call again.
 * - Ownership: a session keeps its model's weights alive, so a model may be freed before its
 *   sessions. The strings a call reads are copied; nothing given is kept after it returns.
 * - Threading: a model may be used from several threads at once; a session by one thread at a
 *   time. staticlm_last_error() is per thread. Each session owns a thread pool for its kernels.
 */
#ifndef STATICLM_STATICLM_H_
#define STATICLM_STATICLM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define STATICLM_API __attribute__((visibility("default")))
#else
#define STATICLM_API
#endif

typedef enum staticlm_status {
  STATICLM_OK = 0,
  STATICLM_ERROR_INVALID_ARGUMENT = 1, /* a bad value from the caller */
  STATICLM_ERROR_INVALID_FILE = 2,     /* a file that does not parse or breaks its format */
  STATICLM_ERROR_UNSUPPORTED = 3,      /* valid input this runtime does not handle */
  STATICLM_ERROR_OUT_OF_RANGE = 4,     /* an index, size or length past a limit */
  STATICLM_ERROR_INTERNAL = 5,         /* a bug (or out of memory) */
  STATICLM_ERROR_INVALID_HANDLE = 6,   /* null, freed or never-created handle */
  STATICLM_ERROR_BUFFER_TOO_SMALL = 7  /* a caller's buffer cannot hold the result */
} staticlm_status;

typedef struct staticlm_model staticlm_model;
typedef struct staticlm_session staticlm_session;

/* "0.1.0". */
STATICLM_API const char* staticlm_version(void);
/* The message of this thread's last failed call ("" when none). Valid until the next call. */
STATICLM_API const char* staticlm_last_error(void);
/* A short name for a status ("invalid argument", ...). */
STATICLM_API const char* staticlm_status_name(staticlm_status status);

/* ---- Model: a checkpoint directory (config.json, weights, tokenizer.json when present). ---- */
STATICLM_API staticlm_status staticlm_model_open(const char* dir, staticlm_model** out);
STATICLM_API staticlm_status staticlm_model_free(staticlm_model* model);
STATICLM_API staticlm_status staticlm_model_vocab_size(const staticlm_model* model, int64_t* out);
/* 1 when the model has a vision tower (image prompts work), else 0. */
STATICLM_API staticlm_status staticlm_model_has_vision(const staticlm_model* model, int* out);

/* Token ids of UTF-8 text (no special tokens added). Writes at most capacity ids; *n_needed
 * receives the count. Needs the checkpoint's tokenizer.json. */
STATICLM_API staticlm_status staticlm_tokenize(const staticlm_model* model, const char* text, int64_t* ids,
                                               size_t capacity, size_t* n_needed);
/* Text of ids (NUL-terminated; control tokens kept). *size_needed receives its size + 1. */
STATICLM_API staticlm_status staticlm_detokenize(const staticlm_model* model, const int64_t* ids, size_t n_ids,
                                                 char* text, size_t capacity, size_t* size_needed);
/* `prompt` as one user message in the checkpoint's chat template (else the Gemma 4 format),
 * ending with the model's turn. Buffer as staticlm_detokenize. */
STATICLM_API staticlm_status staticlm_chat_prompt(const staticlm_model* model, const char* prompt, char* text,
                                                  size_t capacity, size_t* size_needed);

/* Gemma 4 tool calls (<|tool_call>call:NAME{...}<tool_call|>), for a caller's own agent loop.
 * The GBNF grammar that forces calls of the tools in `tools_json` (OpenAI's tool schemas, a JSON
 * array) for staticlm_generate_params.grammar: tool_choice "required" (or NULL) any of them, a
 * function's name only that one; parallel nonzero: one or more calls, else exactly one. Buffer as
 * staticlm_detokenize. INVALID_ARGUMENT names the tools or the choice at fault. */
STATICLM_API staticlm_status staticlm_tool_call_grammar(const char* tools_json, const char* tool_choice, int parallel,
                                                        char* grammar, size_t capacity, size_t* size_needed);
/* The calls in a generated text (staticlm_session_text's) as one JSON object: {"text": the rest,
 * "tool_calls": [{"type": "function", "function": {"name", "arguments": {...}}}]}, as `staticlm
 * run --json` prints it. Buffer as staticlm_detokenize. */
STATICLM_API staticlm_status staticlm_parse_tool_calls(const char* text, char* json, size_t capacity, size_t* size_needed);

/* Options of staticlm_chat_format; NULL fields (and a NULL params pointer) take the defaults. */
typedef struct staticlm_chat_format_params {
  const char* template_file;  /* a Jinja file to use instead of the checkpoint's template, or NULL */
  const char* tools_json;     /* a JSON array of tool schemas for the template, or NULL */
  const char* const* vars;    /* n_vars "KEY=JSON" template variables (e.g. "enable_thinking=true") */
  size_t n_vars;
  int add_generation_prompt;  /* nonzero (the default): end with the model's turn opening */
} staticlm_chat_format_params;

STATICLM_API staticlm_chat_format_params staticlm_chat_format_default_params(void);
/* `messages_json` (a JSON array of {"role", "content"} messages, or {"messages", "tools"}, as
 * transformers' apply_chat_template takes them) rendered with the checkpoint's chat template
 * (else the Gemma 4 format); an image part becomes "<|image|>". Buffer as staticlm_detokenize.
 * INVALID_ARGUMENT names the message or field that does not parse. */
STATICLM_API staticlm_status staticlm_chat_format(const staticlm_model* model, const char* messages_json,
                                                  const staticlm_chat_format_params* params, char* text,
                                                  size_t capacity, size_t* size_needed);

/* ---- Session: one generation context (KV cache, buffers, thread pool). ---- */
typedef struct staticlm_session_params {
  int64_t max_seq;            /* prompt + generated + 1; 0: the runtime config's (2048) */
  int32_t threads;            /* 0: one per core */
  const char* config_file;    /* runtime config YAML, or NULL */
  const char* const* sets;    /* n_sets "key=value" runtime config overrides (e.g. "image_fit=fit") */
  size_t n_sets;
} staticlm_session_params;

STATICLM_API staticlm_session_params staticlm_session_default_params(void);
STATICLM_API staticlm_status staticlm_session_create(const staticlm_model* model, const staticlm_session_params* params,
                                                     staticlm_session** out);
STATICLM_API staticlm_status staticlm_session_free(staticlm_session* session);

/* Start from staticlm_generate_default_params(). In the first group negative (or 0 for
 * max_new_tokens) means "the checkpoint's default" (generation_config.json, greedy without one);
 * temperature 0 is greedy. The rest are `staticlm run`'s flags of the same names; their defaults
 * change nothing. NaN is refused by name. */
typedef struct staticlm_generate_params {
  int64_t max_new_tokens;
  double temperature;
  int64_t top_k;
  double top_p;
  double min_p;
  double repetition_penalty;
  uint64_t seed;
  int64_t repeat_last_n;           /* the repetition penalty's window: -1 (default) every token, 0 none */
  double presence_penalty;         /* OpenAI's, on the reply's tokens, in [-2, 2]; 0 (default): off */
  double frequency_penalty;        /* the same, times each token's count so far */
  const char* const* stop;         /* n_stop strings: the reply ends with the token whose text completes one */
  size_t n_stop;
  const int64_t* logit_bias_tokens;  /* n_logit_bias tokens, each given logit_bias_values[i] */
  const float* logit_bias_values;    /* added to its logit; -INFINITY bans the token */
  size_t n_logit_bias;
  int ignore_eos;                  /* nonzero: the end tokens are never sampled */
  const char* json_schema;         /* the reply is a value of this JSON Schema (its JSON text), or NULL */
  const char* grammar;             /* the reply is a text of this GBNF grammar (rule root), or NULL */
  double top_n_sigma;              /* keep tokens within this many standard deviations of the best; -1 (default): off */
  double typical_p;                /* locally typical sampling mass; 1 (default): off */
  double xtc_probability;          /* XTC's chance per step; 0 (default): off */
  double xtc_threshold;            /* XTC's threshold; 0.1 (default) */
  int32_t mirostat;                /* Mirostat 1 or 2 (replaces the truncation samplers); 0 (default): off */
  double mirostat_tau;             /* its target surprise in bits; 5 (default) */
  double mirostat_eta;             /* its learning rate; 0.1 (default) */
  double dry_multiplier;           /* DRY's penalty on a token continuing a repeat; 0 (default): off */
  double dry_base;                 /* 1.75 (default) */
  int64_t dry_allowed_length;      /* repeats this long go unpenalised; 2 (default) */
  int64_t dry_penalty_last_n;      /* the window; -1 (default): every token */
  const char* const* dry_sequence_breakers; /* n_dry_sequence_breakers strings; NULL (default): "\n" ":" "\"" "*" */
  size_t n_dry_sequence_breakers;
} staticlm_generate_params;

STATICLM_API staticlm_generate_params staticlm_generate_default_params(void);

/* Exactly one of text (UTF-8) and ids. With image (a JPEG/PNG file), text holds "<|image|>". */
typedef struct staticlm_prompt {
  const char* text;
  const int64_t* ids;
  size_t n_ids;
  const char* image;
} staticlm_prompt;

/* Called with each token as soon as it is chosen and the text it completes (text_size bytes,
 * not NUL-terminated, often 0). Return 0 to stop generating, nonzero to go on. */
typedef int (*staticlm_token_callback)(int64_t token, const char* text, size_t text_size, void* user_data);

typedef struct staticlm_stats {
  int64_t prompt_tokens;
  int64_t generated_tokens;
  int64_t decode_steps;
  double prefill_seconds;      /* text prefill, the image encode left out */
  double image_encode_seconds;
  double decode_seconds;
  double time_to_first_token_seconds;
  char stop_reason[32];        /* "eos", "stop string", "max new tokens", "cache full", "stopped by caller" */
} staticlm_stats;

/* Polled on the generating thread before each layer of the prompt's prefill and after each token
 * (as llama.cpp's llama_set_abort_callback): nonzero stops the call with stop_reason "stopped by
 * caller", during the prompt with no tokens (the session's cache then empty), so a long prompt
 * can be given up part-way. */
typedef int (*staticlm_abort_callback)(void* user_data);

/* The session's abort callback for its next staticlm_generate calls (NULL: none). Not while a
 * call runs on the session (INVALID_ARGUMENT): the callback itself may read a flag that another
 * thread sets. */
STATICLM_API staticlm_status staticlm_session_set_abort_callback(staticlm_session* session,
                                                                 staticlm_abort_callback callback, void* user_data);

/* Starts over: prefills the prompt and generates. callback may be NULL. The generated tokens go
 * to tokens (capacity ids; NULL with capacity 0 to skip); *n_tokens receives how many were
 * generated (BUFFER_TOO_SMALL, with the first `capacity` written, when they do not fit). */
STATICLM_API staticlm_status staticlm_generate(staticlm_session* session, const staticlm_prompt* prompt,
                                               const staticlm_generate_params* params,
                                               staticlm_token_callback callback, void* user_data, int64_t* tokens,
                                               size_t capacity, size_t* n_tokens);
/* As staticlm_generate, with the options the params struct has no field for (its layout is
 * fixed) in `options_json`, a JSON object (NULL or "{}": none), by the Python keywords' names:
 * "thought_first" (bool: a json_schema value may follow one thought), "special" (bool: the
 * text keeps control tokens and the end token), "dynatemp_range", "dynatemp_exponent" (numbers:
 * dynamic temperature), "samplers" (an array of llama.cpp's sampler names: the stages' order).
 * An unknown key or a value of the wrong type is INVALID_ARGUMENT naming it. */
STATICLM_API staticlm_status staticlm_generate_with_options(staticlm_session* session, const staticlm_prompt* prompt,
                                                            const staticlm_generate_params* params,
                                                            const char* options_json, staticlm_token_callback callback,
                                                            void* user_data, int64_t* tokens, size_t capacity,
                                                            size_t* n_tokens);
/* The text of the session's last generate, control tokens left out (what `staticlm run`
 * prints). Buffer as staticlm_detokenize. */
STATICLM_API staticlm_status staticlm_session_text(const staticlm_session* session, char* text, size_t capacity,
                                                   size_t* size_needed);
/* The statistics of the session's last generate. */
STATICLM_API staticlm_status staticlm_session_stats(const staticlm_session* session, staticlm_stats* out);

/* ---- Static inputs: the fixed-shape inputs of one prompt, as `staticlm inputs` writes them
 * (llm_input_ids int64 [1,S], attention_mask uint8 [1,S], valid_length int64 [1], raw_input_ids
 * int64 [1,T] and, with an image, pixel_values float32 [1,N,768], image_position_ids int64
 * [1,N,2]). ---- */
typedef struct staticlm_tensors staticlm_tensors;

typedef struct staticlm_tensor_info {
  const char* name;   /* valid while the set lives */
  const char* dtype;  /* "float32", "int64" or "uint8" */
  size_t rank;
  int64_t shape[8];
  size_t nbytes;
} staticlm_tensor_info;

/* prompt is used as given ("<|image|>" marks the image); image may be NULL; sets as in
 * staticlm_session_params (e.g. "max_seq=512", "image_fit=fit"). */
STATICLM_API staticlm_status staticlm_build_static_inputs(const char* model_dir, const char* prompt, const char* image,
                                                          const char* const* sets, size_t n_sets,
                                                          staticlm_tensors** out);
STATICLM_API staticlm_status staticlm_tensors_free(staticlm_tensors* tensors);
STATICLM_API staticlm_status staticlm_tensors_count(const staticlm_tensors* tensors, size_t* out);
/* Tensor `index` (names in sorted order); OUT_OF_RANGE past the count. */
STATICLM_API staticlm_status staticlm_tensors_info(const staticlm_tensors* tensors, size_t index,
                                                   staticlm_tensor_info* out);
/* Copies tensor `name`'s bytes (row-major, native byte order) into data; *size_needed receives
 * its size in bytes. INVALID_ARGUMENT names an unknown tensor. */
STATICLM_API staticlm_status staticlm_tensors_copy(const staticlm_tensors* tensors, const char* name, void* data,
                                                   size_t capacity, size_t* size_needed);

/* pixel_values float32 [1,N,768] of one image file (JPEG or PNG), preprocessed as for a prompt
 * with it (the runtime config's vision profile; sets as in staticlm_session_params, e.g.
 * "image_fit=fit"). Writes the N*768 floats into pixel_values (capacity floats; NULL with
 * capacity 0 to ask the size); *n_needed receives N*768 and shape, when not NULL, {1, N, 768}.
 * INVALID_ARGUMENT for a text-only model or an image that does not fit the profile, naming it. */
STATICLM_API staticlm_status staticlm_preprocess_image(const char* model_dir, const char* image,
                                                       const char* const* sets, size_t n_sets, float* pixel_values,
                                                       size_t capacity, size_t* n_needed, int64_t shape[3]);

/* ---- Inspect: the static pipeline against a reference, step by step (`staticlm inspect`). ---- */
typedef struct staticlm_inspect_params {
  const char* config_file;    /* runtime config YAML, or NULL */
  const char* const* sets;    /* n_sets "key=value" runtime config overrides */
  size_t n_sets;
  /* The prompt: text (as given; "<|image|>" marks the image) or ids; with neither, the golden
   * file's ids (reference "golden:...") or the runtime config's prompt. */
  const char* prompt;
  const int64_t* prompt_ids;
  size_t n_prompt_ids;
  const char* image;          /* an image file, or NULL */
  const char* reference;      /* "dynamic" (NULL), "model:DIR2" or "golden:FILE.safetensors" */
  const char* steps;          /* "1-8" (NULL), or a subset such as "1,3-5" */
  int64_t decode_steps;       /* negative: the default */
  int64_t gen_steps;          /* negative: the default */
  int64_t max_seq;            /* 0: the runtime config's */
  int32_t threads;            /* 0: one per core */
} staticlm_inspect_params;

STATICLM_API staticlm_inspect_params staticlm_inspect_default_params(void);
/* Runs the inspector on the checkpoint in model_dir and writes its JSON report ({"pass", "model",
 * "reference", "tolerance", "steps": [...], "first_divergent_layer"}, what `staticlm inspect
 * --report` writes) into report; buffer as staticlm_detokenize (a report is a few KB: 64 KiB
 * holds any; a call with too small a buffer must run again). *pass, when not NULL, receives 1
 * when every step passed, else 0 (a step that fails is STATICLM_OK with *pass 0). */
STATICLM_API staticlm_status staticlm_inspect(const char* model_dir, const staticlm_inspect_params* params, int* pass,
                                              char* report, size_t capacity, size_t* size_needed);

#ifdef __cplusplus
}
#endif

#endif /* STATICLM_STATICLM_H_ */
