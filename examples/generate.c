/* Greedy (or sampled) generation through staticlm's C API:
 *   generate MODEL_DIR (-p TEXT | --ids 2,105,...) [--image FILE] [-n N] [--max-seq S] [--set k=v]...
 * Streams the generated text to stdout as it comes, then prints "tokens: ID ID ..." on its own
 * line, and the statistics to stderr. Exits 2 with "error: <message>" on a failed call. */
#include <staticlm/staticlm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 16
#define MAX_IDS 4096

static int print_piece(int64_t token, const char* text, size_t size, void* user_data) {
  (void)token;
  (void)user_data;
  fwrite(text, 1, size, stdout);
  fflush(stdout);
  return 1; /* go on */
}

static int check(staticlm_status status) {
  if (status == STATICLM_OK) return 0;
  fprintf(stderr, "error: %s (%s)\n", staticlm_last_error(), staticlm_status_name(status));
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_DIR (-p TEXT | --ids 2,105,...) [--image FILE] [-n N] [--max-seq S] [--set k=v]...\n", argv[0]);
    return 2;
  }
  staticlm_prompt prompt = {0};
  staticlm_session_params sp = staticlm_session_default_params();
  staticlm_generate_params gp = staticlm_generate_default_params();
  const char* sets[MAX_SETS];
  static int64_t ids[MAX_IDS];
  size_t n_sets = 0;
  gp.temperature = 0; /* greedy unless --temp */
  for (int i = 2; i + 1 < argc; i += 2) {
    const char* flag = argv[i];
    const char* value = argv[i + 1];
    if (strcmp(flag, "-p") == 0) {
      prompt.text = value;
    } else if (strcmp(flag, "--ids") == 0) {
      for (char* p = (char*)value; *p && prompt.n_ids < MAX_IDS; ++p) {
        ids[prompt.n_ids++] = strtoll(p, &p, 10);
        if (*p == '\0') break;
      }
      prompt.ids = ids;
    } else if (strcmp(flag, "--image") == 0) {
      prompt.image = value;
    } else if (strcmp(flag, "-n") == 0) {
      gp.max_new_tokens = strtoll(value, NULL, 10);
    } else if (strcmp(flag, "--temp") == 0) {
      gp.temperature = strtod(value, NULL);
    } else if (strcmp(flag, "--max-seq") == 0) {
      sp.max_seq = strtoll(value, NULL, 10);
    } else if (strcmp(flag, "--set") == 0 && n_sets < MAX_SETS) {
      sets[n_sets++] = value;
    } else {
      fprintf(stderr, "error: unknown flag %s\n", flag);
      return 2;
    }
  }
  sp.sets = sets;
  sp.n_sets = n_sets;

  staticlm_model* model = NULL;
  staticlm_session* session = NULL;
  if (check(staticlm_model_open(argv[1], &model))) return 2;
  if (check(staticlm_session_create(model, &sp, &session))) {
    staticlm_model_free(model);
    return 2;
  }
  staticlm_model_free(model); /* the session keeps the weights alive */

  int64_t tokens[1024];
  size_t n = 0;
  int failed = check(staticlm_generate(session, &prompt, &gp, print_piece, NULL, tokens, 1024, &n));
  if (!failed) {
    printf("\ntokens:");
    for (size_t i = 0; i < n; ++i) printf(" %lld", (long long)tokens[i]);
    printf("\n");
    staticlm_stats stats;
    if (!check(staticlm_session_stats(session, &stats))) {
      fprintf(stderr, "prefill: %lld tokens in %.3f s; decode: %lld tokens in %.3f s; stopped: %s\n",
              (long long)stats.prompt_tokens, stats.prefill_seconds, (long long)stats.decode_steps,
              stats.decode_seconds, stats.stop_reason);
    }
  }
  staticlm_session_free(session);
  return failed ? 2 : 0;
}
