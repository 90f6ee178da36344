/* Greedy text from a checkpoint directory with the C API (libstaticlm.so). */
#include <staticlm/staticlm.h>
#include <stdio.h>

int main(int argc, char** argv) {
  staticlm_model* model = NULL;
  staticlm_session* session = NULL;
  staticlm_session_params sp = staticlm_session_default_params();
  staticlm_generate_params gp = staticlm_generate_default_params();
  staticlm_prompt prompt = {"Why is the sky blue?", NULL, 0, NULL};
  char text[4096];
  size_t n = 0;
  sp.max_seq = 256;
  gp.max_new_tokens = 8;
  gp.temperature = 0;
  if (argc < 2 || staticlm_model_open(argv[1], &model) != STATICLM_OK ||
      staticlm_session_create(model, &sp, &session) != STATICLM_OK ||
      staticlm_generate(session, &prompt, &gp, NULL, NULL, NULL, 0, &n) != STATICLM_OK ||
      staticlm_session_text(session, text, sizeof text, &n) != STATICLM_OK) {
    fprintf(stderr, "error: %s\n", staticlm_last_error());
    return 1;
  }
  printf("%s\n", text);
  staticlm_session_free(session);
  staticlm_model_free(model);
  return 0;
}
