// The bad-input catalogue (issue 13): every subcommand of `staticlm --help` against every class
// of bad input it can meet (missing, empty, truncated, wrong type, wrong shape, oversized,
// non-UTF-8, out-of-range numbers, unwritable output path). Each row must end with exit code 2,
// exactly one "error: " line on stderr (the last line) that names the file, field or value, no
// file left behind in the output directory, and a pre-existing output left byte-for-byte as it
// was. A subcommand that `staticlm --help` lists and no row exercises fails the coverage test.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/file.h"
#include "test_util.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;

// One catalogue row. In args, {M} is a good tiny checkpoint, {Q} its q8 copy, {T} the same
// checkpoint with an empty tokenizer.json (a row on {T} is refused for its flag or file, so
// before the checkpoint is loaded), {D} the directory of crafted bad inputs, {O} an output
// directory that must stay as it was; {BAD} expands to a non-UTF-8 argument (two bytes 0xff
// 0xfe), {LONG} to 6000 letters.
struct Row {
  const char* name;    // test name suffix
  const char* args;    // the command line after `staticlm`
  const char* expect;  // a substring the error line must hold (the file, field or value)
  const char* out = "";  // the output under {O} a failing run must leave unchanged ("" for none);
                       // a trailing '/' makes it a directory holding one file
};

const Row kRows[] = {
    // info
    {"info_missing_dir", "info -m {D}/nope", "{D}/nope"},
    {"info_model_is_a_file", "info -m {D}/blocker", "{D}/blocker"},
    {"info_empty_config", "info -m {D}/m_cfg_empty", "m_cfg_empty/config.json"},
    {"info_config_wrong_type", "info -m {D}/m_cfg_type", "text_config.hidden_size"},
    {"info_config_oversized", "info -m {D}/m_cfg_huge", "text_config.hidden_size: 1000000000000"},
    {"info_config_not_utf8", "info -m {D}/m_cfg_utf8", "m_cfg_utf8/config.json"},
    {"info_truncated_safetensors", "info -m {D}/m_trunc", "m_trunc/model.safetensors"},
    // a name with a newline and an escape byte: the error stays one line, the bytes escaped
    {"info_dir_name_with_newline", "info -m '{D}/new\nline\x1b'", "{D}/new\\nline\\x1b"},
    // Bytes that are not UTF-8 are escaped too; a message quoting kilobytes is cut in its middle.
    {"info_dir_name_not_utf8", "info -m '{D}/bad\xff\xfename'", "{D}/bad\\xff\\xfename"},
    {"info_dir_name_very_long", "info -m {D}/{LONG}", "bytes left out ...] "},
    // make-model
    {"make_model_bad_preset", "make-model --preset bogus --out {O}/mm", "bogus", "mm/"},
    {"make_model_bad_dtype", "make-model --preset tiny --dtype i3 --out {O}/mm", "i3", "mm/"},
    {"make_model_bad_init", "make-model --preset tiny --init warm --out {O}/mm", "warm", "mm/"},
    {"make_model_negative_seed", "make-model --preset tiny --seed -1 --out {O}/mm", "--seed", "mm/"},
    {"make_model_out_under_a_file", "make-model --preset tiny --out {D}/blocker/mm", "{D}/blocker/mm"},
    {"make_model_out_under_proc", "make-model --preset tiny --out /proc/staticlm-mm", "/proc/staticlm-mm"},
    {"make_model_tokenizer_missing", "make-model --preset tiny --tokenizer-from {D}/nope --out {O}/mm", "{D}/nope", "mm/"},
    {"make_model_tokenizer_empty", "make-model --preset tiny --tokenizer-from {D}/empty --out {O}/mm", "{D}/empty", "mm/"},
    {"make_model_tokenizer_not_utf8", "make-model --preset tiny --tokenizer-from {D}/nonutf8.txt --out {O}/mm",
     "{D}/nonutf8.txt", "mm/"},
    // preprocess
    {"preprocess_missing_image", "preprocess --image {D}/nope --out {O}/x.safetensors", "{D}/nope", "x.safetensors"},
    {"preprocess_empty_image", "preprocess --image {D}/empty --out {O}/x.safetensors", "{D}/empty", "x.safetensors"},
    {"preprocess_truncated_png", "preprocess --image {F}/images/bad_truncated.png --out {O}/x.safetensors",
     "bad_truncated.png", "x.safetensors"},
    {"preprocess_not_an_image", "preprocess --image {D}/nonutf8.txt --out {O}/x.safetensors", "{D}/nonutf8.txt",
     "x.safetensors"},
    {"preprocess_oversized_image", "preprocess --image {F}/images/bad_bomb.png --out {O}/x.safetensors", "bad_bomb.png",
     "x.safetensors"},
    {"preprocess_soft_tokens_overflow", "preprocess --image {F}/images/tiny3x7.png --max-soft-tokens 99999999999 --out {O}/x.safetensors",
     "99999999999", "x.safetensors"},
    {"preprocess_soft_tokens_negative", "preprocess --image {F}/images/tiny3x7.png --max-soft-tokens -1 --out {O}/x.safetensors",
     "-1", "x.safetensors"},
    {"preprocess_max_pixels_negative", "preprocess --image {F}/images/tiny3x7.png --max-pixels -5 --out {O}/x.safetensors",
     "--max-pixels: -5", "x.safetensors"},
    {"preprocess_grid_oversized", "preprocess --image {F}/images/tiny3x7.png --grid 99999999x9999999 --out {O}/x.safetensors",
     "99999999 x 9999999", "x.safetensors"},
    {"preprocess_grid_malformed", "preprocess --image {F}/images/tiny3x7.png --grid 3y4 --out {O}/x.safetensors", "3y4",
     "x.safetensors"},
    {"preprocess_fit_mode_unknown", "preprocess --image {F}/images/tiny3x7.png --grid 4x4 --fit-mode squash --out {O}/x.safetensors",
     "squash", "x.safetensors"},
    {"preprocess_out_under_a_file", "preprocess --image {F}/images/tiny3x7.png --out {D}/blocker/x.safetensors",
     "{D}/blocker/x.safetensors"},
    {"preprocess_out_under_proc", "preprocess --image {F}/images/tiny3x7.png --out /proc/x.safetensors", "/proc/x.safetensors"},
    // tokenize
    {"tokenize_tokenizer_missing", "tokenize --tokenizer {D}/nope --text hi", "{D}/nope"},
    {"tokenize_tokenizer_empty", "tokenize --tokenizer {D}/empty --text hi", "{D}/empty"},
    {"tokenize_tokenizer_truncated", "tokenize --tokenizer {D}/trunc.json --text hi", "{D}/trunc.json"},
    {"tokenize_tokenizer_not_utf8", "tokenize --tokenizer {D}/nonutf8.txt --text hi", "{D}/nonutf8.txt"},
    {"tokenize_tokenizer_wrong_type", "tokenize --tokenizer {D}/msgs_type.json --text hi", "{D}/msgs_type.json"},
    {"tokenize_model_tokenizer_empty", "tokenize -m {D}/m_tok_empty --text hi", "m_tok_empty/tokenizer.json"},
    {"tokenize_text_not_utf8", "tokenize -m {M} --text {BAD}", "UTF-8"},
    {"tokenize_jsonl_missing", "tokenize -m {M} --jsonl {D}/nope", "{D}/nope"},
    {"tokenize_jsonl_not_utf8", "tokenize -m {M} --jsonl {D}/nonutf8.txt", "{D}/nonutf8.txt:1"},
    {"tokenize_jsonl_truncated", "tokenize -m {M} --jsonl {D}/trunc.json", "{D}/trunc.json:1"},
    {"tokenize_jsonl_wrong_type", "tokenize -m {M} --jsonl {D}/number.jsonl", "{D}/number.jsonl:1"},
    {"tokenize_jsonl_blank_line", "tokenize -m {M} --jsonl {D}/blank_line.jsonl", "{D}/blank_line.jsonl:2: empty line"},
    // detokenize
    {"detokenize_tokenizer_missing", "detokenize --tokenizer {D}/nope --ids 1", "{D}/nope"},
    {"detokenize_tokenizer_empty", "detokenize --tokenizer {D}/empty --ids 1", "{D}/empty"},
    {"detokenize_ids_not_numbers", "detokenize -m {M} --ids 1,x", "\"x\""},
    {"detokenize_ids_overflow", "detokenize -m {M} --ids 99999999999", "99999999999"},
    {"detokenize_ids_negative", "detokenize -m {M} --ids -1", "\"-1\""},
    {"detokenize_ids_out_of_vocabulary", "detokenize -m {M} --ids 999999", "999999"},
    // chat-format
    {"chat_format_missing_model", "chat-format -m {D}/nope --prompt hi", "{D}/nope"},
    {"chat_format_model_tokenizer_empty", "chat-format -m {D}/m_tok_empty --prompt hi --ids", "m_tok_empty/tokenizer.json"},
    {"chat_format_messages_missing", "chat-format -m {M} --messages {D}/nope", "{D}/nope"},
    {"chat_format_messages_empty", "chat-format -m {M} --messages {D}/empty", "{D}/empty"},
    {"chat_format_messages_truncated", "chat-format -m {M} --messages {D}/trunc.json", "{D}/trunc.json"},
    {"chat_format_messages_wrong_type", "chat-format -m {M} --messages {D}/msgs_type.json", "{D}/msgs_type.json"},
    {"chat_format_messages_not_utf8", "chat-format -m {M} --messages {D}/msgs_utf8.json", "{D}/msgs_utf8.json"},
    {"chat_format_prompt_not_utf8", "chat-format -m {M} --prompt {BAD}", "--prompt"},
    {"chat_format_system_not_utf8", "chat-format -m {M} --prompt hi --system {BAD}", "--system"},
    {"chat_format_template_missing", "chat-format -m {M} --prompt hi --chat-template {D}/nope", "{D}/nope"},
    // Something that exists but is not a file is named as such, not as missing.
    {"chat_format_template_is_a_directory", "chat-format -m {M} --prompt hi --chat-template {D}/a_dir",
     "{D}/a_dir: is a directory"},
    {"info_weights_are_a_directory", "info -m {D}/m_st_dir", "m_st_dir/model.safetensors: not a regular file"},
    {"run_weights_are_a_directory", "run -m {D}/m_st_dir -p hi -n 1", "m_st_dir/model.safetensors: not a regular file"},
    {"chat_format_template_broken", "chat-format -m {M} --prompt hi --chat-template {D}/bad.jinja", "{D}/bad.jinja:1"},
    {"chat_format_template_not_utf8", "chat-format -m {M} --prompt hi --chat-template {D}/nonutf8.txt",
     "{D}/nonutf8.txt:1: not valid UTF-8 (byte 0)"},
    {"chat_format_template_recursive", "chat-format -m {M} --prompt hi --chat-template {D}/recursive.jinja",
     "{D}/recursive.jinja:1: macro 'f': more than 100 macro calls"},
    {"chat_format_template_endless", "chat-format -m {M} --prompt hi --chat-template {D}/endless.jinja",
     "{D}/endless.jinja:1: the template ran more than"},
    {"chat_format_template_huge_output", "chat-format -m {M} --prompt hi --chat-template {D}/huge.jinja",
     "{D}/huge.jinja:1: *: a string of"},
    {"chat_format_template_deep_syntax", "chat-format -m {M} --prompt hi --chat-template {D}/deep.jinja",
     "{D}/deep.jinja:1: expressions and blocks nested more than"},
    {"chat_format_template_int_overflow", "chat-format -m {M} --prompt hi --chat-template {D}/overflow.jinja",
     "{D}/overflow.jinja:1: integer overflow"},
    {"chat_format_messages_too_deep", "chat-format -m {M} --messages {D}/deep.json", "{D}/deep.json: JSON nested deeper than"},
    {"chat_format_tools_truncated", "chat-format -m {M} --prompt hi --tools {D}/trunc.json", "{D}/trunc.json"},
    {"chat_format_tools_wrong_type", "chat-format -m {M} --prompt hi --tools {D}/number.jsonl", "{D}/number.jsonl"},
    {"chat_format_var_no_value", "chat-format -m {M} --prompt hi --var x", "--var x"},
    {"chat_format_var_not_json", "chat-format -m {M} --prompt hi --var x={bad", "x={bad"},
    // run
    {"run_missing_model", "run -m {D}/nope -p hi -n 1", "{D}/nope"},
    {"run_empty_config", "run -m {D}/m_cfg_empty -p hi -n 1", "m_cfg_empty/config.json"},
    {"run_config_wrong_type", "run -m {D}/m_cfg_type -p hi -n 1", "text_config.hidden_size"},
    {"run_config_oversized", "run -m {D}/m_cfg_huge -p hi -n 1", "1000000000000"},
    {"run_weights_wrong_shape", "run -m {D}/m_cfg_shape -p hi -n 1 --dump-logits {O}/x.safetensors",
     "model.language_model.embed_tokens.weight", "x.safetensors"},
    {"run_truncated_safetensors", "run -m {D}/m_trunc -p hi -n 1 --dump-logits {O}/x.safetensors",
     "m_trunc/model.safetensors", "x.safetensors"},
    {"run_tokenizer_empty", "run -m {D}/m_tok_empty -p hi -n 1", "m_tok_empty/tokenizer.json"},
    {"run_prompt_not_utf8", "run -m {M} -p {BAD} -n 1 --dump-logits {O}/x.safetensors", "--prompt", "x.safetensors"},
    // 8 MB without a space: one BPE piece, refused by its length before it is merged.
    {"run_prompt_file_far_past_max_seq", "run -m {M} -f {D}/long_run.txt -n 1 --max-seq 64 --dump-logits {O}/x.safetensors",
     "the prompt has at least", "x.safetensors"},
    {"run_max_new_tokens_negative", "run -m {M} -p hi -n -3 --dump-logits {O}/x.safetensors", "-n -3", "x.safetensors"},
    {"run_max_seq_negative", "run -m {M} -p hi -n 1 --max-seq -4", "--max-seq: Value -4 not in range"},
    // As typed: 0 is not reported as a --set, a number past 64 bits not as a clamped one.
    {"inputs_max_seq_zero", "inputs -m {M} --prompt hi --max-seq 0 --out {O}/x.safetensors", "--max-seq: Value 0 not in range",
     "x.safetensors"},
    {"run_max_seq_past_64_bits", "run -m {M} -p hi --max-seq 99999999999999999999",
     "--max-seq: Value 99999999999999999999 not in range"},
    {"run_profile_unknown", "run -m {T} -p hi -n 1 --profile bogus --dump-logits {O}/x.safetensors", "--profile bogus",
     "x.safetensors"},
    {"run_profile_truncated", "run -m {M} -p '<|image|>' --image {F}/images/tiny3x7.png -n 1 --profile {D}/trunc.json",
     "{D}/trunc.json"},
    {"run_max_seq_oversized", "run -m {M} -p hi -n 1 --max-seq 999999999 --dump-logits {O}/x.safetensors",
     "--max-seq 999999999", "x.safetensors"},
    // Within max_position_embeddings (131072), but its masks alone are 128 GiB: refused up front
    // (65536 used to be killed by the kernel after 25 s and 24 GB).
    {"run_max_seq_past_memory", "run -m {M} -p hi -n 1 --max-seq 131072 --dump-logits {O}/x.safetensors",
     "max_seq 131072: a prefill's 2 attention masks", "x.safetensors"},
    {"serve_max_seq_past_memory", "serve -m {M} --port 0 --max-seq 131072",
     "--slots 1 with max_seq 131072: the slots' prefill attention masks"},
    // Each slot has its own masks: 64 x 8 GiB.
    {"serve_slots_past_memory", "serve -m {M} --port 0 --max-seq 32768 --slots 64",
     "--slots 64 with max_seq 32768: the slots' prefill attention masks"},
    {"run_temperature_not_a_number", "run -m {T} -p hi -n 1 --temp nan", "temperature"},
    {"run_top_p_out_of_range", "run -m {M} -p hi -n 1 --top-p 2", "top_p"},
    {"run_repeat_last_n_below_minus_one", "run -m {T} -p hi -n 1 --repeat-last-n -2", "repeat_last_n"},
    {"run_typical_zero", "run -m {T} -p hi -n 1 --typical 0", "typical_p = 0: expected a number in (0, 1]"},
    {"run_xtc_probability_above_one", "run -m {T} -p hi -n 1 --xtc-probability 1.5", "xtc_probability = 1.5"},
    {"chat_top_n_sigma_not_finite", "chat -m {T} --top-n-sigma inf", "top_n_sigma = inf: expected a finite number"},
    {"run_mirostat_three", "run -m {T} -p hi -n 1 --mirostat 3", "mirostat 3: expected 0 (off), 1 or 2"},
    {"run_samplers_unknown", "run -m {T} -p hi -n 1 --samplers 'top_k;frobnicate'", "--samplers: unknown sampler 'frobnicate'"},
    {"run_sampling_seq_unknown", "run -m {T} -p hi -n 1 --sampling-seq kq", "--sampling-seq: unknown sampler letter 'q'"},
    {"run_samplers_penalties_late", "run -m {T} -p hi -n 1 --samplers 'top_k;penalties'", "penalties after top_k"},
    {"run_dynatemp_negative", "run -m {T} -p hi -n 1 --dynatemp-range -1", "dynatemp_range"},
    {"run_dry_base_below_one", "run -m {T} -p hi -n 1 --dry-multiplier 1 --dry-base 0.5", "dry_base = 0.5: expected a number >= 1"},
    {"run_dry_breaker_none_beside_others", "run -m {T} -p hi -n 1 --dry-sequence-breaker none --dry-sequence-breaker x",
     "--dry-sequence-breaker none: give it alone"},
    {"run_threads_negative", "run -m {M} -p hi -n 1 --threads -1", "--threads -1"},
    {"run_threads_oversized", "run -m {M} -p hi -n 1 --threads 100000", "--threads 100000"},
    {"run_prompt_ids_not_numbers", "run -m {M} --prompt-ids 1,x -n 1", "\"x\""},
    {"run_prompt_ids_out_of_vocabulary", "run -m {M} --prompt-ids 99999999 -n 1", "99999999"},
    {"run_messages_wrong_type", "run -m {T} --messages {D}/msgs_type.json -n 1", "{D}/msgs_type.json"},
    {"run_messages_not_utf8", "run -m {M} --messages {D}/msgs_utf8.json -n 1", "{D}/msgs_utf8.json"},
    {"run_messages_too_deep", "run -m {M} --messages {D}/deep.json -n 1", "{D}/deep.json: JSON nested deeper than"},
    // nlohmann would read it as a double; jinja2 would print the integer.
    {"chat_format_messages_object_too_wide", "chat-format -m {M} --messages {D}/wide.json",
     "{D}/wide.json: a JSON object of more than 10000 members (the limit)"},
    {"chat_format_messages_integer_past_64_bits", "chat-format -m {M} --messages {D}/big_int.json",
     "{D}/big_int.json: integer 18446744073709551616 at byte 39 does not fit in 64 bits"},
    {"run_runtime_config_missing", "run -m {M} -p hi -n 1 --config {D}/nope", "{D}/nope"},
    {"run_runtime_config_truncated", "run -m {M} -p hi -n 1 --config {D}/trunc.yaml", "{D}/trunc.yaml"},
    {"run_runtime_config_wrong_type", "run -m {M} -p hi -n 1 --config {D}/type.yaml", "max_seq"},
    // PyYAML keeps a repeated key's last value, yaml-cpp its first: refused either way.
    {"run_runtime_config_duplicate_key", "run -m {M} -p hi -n 1 --config {D}/dup.yaml", "key 'max_seq' given twice (line 2)"},
    {"run_runtime_config_two_documents", "run -m {M} -p hi -n 1 --config {D}/two_docs.yaml", "more than one YAML document"},
    // yaml-cpp's LoadAll looped for ever on a stray top-level ',' (the runtime_config fuzzer hung in CI).
    // Overlong forms and surrogates are not UTF-8: the error line escapes them, é stays.
    {"run_runtime_config_overlong_utf8", "run -m {M} -p hi -n 1 --config {D}/overlong.yaml",
     "max_seq: expected an integer, got '\\xc0\\xaf \\xed\\xa0\\x80 \xc3\xa9'"},
    {"run_runtime_config_stray_comma", "run -m {M} -p hi -n 1 --config {D}/comma.yaml", "no document can start with ','"},
    // An alias inside its own anchor is a cycle: its walk overflowed the stack (SIGSEGV).
    {"run_runtime_config_self_alias", "run -m {M} -p hi -n 1 --config {D}/self_alias.yaml", "or an alias inside its own anchor"},
    {"run_runtime_config_alias_bomb", "run -m {M} -p hi -n 1 --config {D}/alias_bomb.yaml", "more than 100000 YAML nodes"},
    {"run_runtime_config_too_large", "run -m {M} -p hi -n 1 --config {D}/huge.yaml", "(the limit)"},
    {"run_runtime_config_not_utf8", "run -m {M} -p hi -n 1 --config {D}/nonutf8.txt", "{D}/nonutf8.txt"},
    {"run_set_wrong_type", "run -m {M} -p hi -n 1 --set max_seq=lots", "max_seq=lots"},
    {"run_set_no_value", "run -m {M} -p hi -n 1 --set nokey", "nokey"},
    {"run_set_unknown_key", "run -m {T} -p hi -n 1 --set bogus_key=1", "bogus_key"},
    {"run_image_empty", "run -m {T} -p hi -n 1 --image {D}/empty --dump-logits {O}/x.safetensors", "{D}/empty", "x.safetensors"},
    {"run_image_truncated", "run -m {M} -p hi -n 1 --image {F}/images/bad_truncated.jpg", "bad_truncated.jpg"},
    {"run_dump_logits_under_a_file", "run -m {T} -p hi -n 1 --dump-logits {D}/blocker/x.safetensors",
     "{D}/blocker/x.safetensors"},
    {"run_dump_logits_under_proc", "run -m {M} -p hi -n 1 --dump-logits /proc/x.safetensors", "/proc/x.safetensors"},
    {"run_backend_unknown", "run -m {M} -p hi -n 1 --backend gpu --dump-logits {O}/x.safetensors", "--backend 'gpu'",
     "x.safetensors"},
    {"run_backend_plugin_missing", "run -m {M} -p hi -n 1 --backend plugin:{D}/nope.so --dump-logits {O}/x.safetensors",
     "{D}/nope.so: no such file", "x.safetensors"},
    {"run_backend_plugin_not_a_shared_object", "run -m {M} -p hi -n 1 --backend plugin:{D}/empty --dump-logits {O}/x.safetensors",
     "{D}/empty: cannot load", "x.safetensors"},
    {"run_backend_option_not_key_value", "run -m {M} -p hi -n 1 --backend plugin:x.so:a=1,b", "option 'b' is not key=value"},
    {"run_backend_plugin_option_unknown",
     "run -m {M} -p hi -n 1 --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so:bogus=1 --dump-logits {O}/x.safetensors",
     "unknown option 'bogus'", "x.safetensors"},
    {"run_fallback_unknown", "run -m {M} -p hi -n 1 --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so --fallback gpu",
     "--fallback 'gpu'"},
    {"run_fallback_without_plugin", "run -m {M} -p hi -n 1 --fallback cpu", "--fallback cpu goes with --backend plugin"},
    {"run_partial_plugin_without_fallback",
     "run -m {M} -p hi -n 1 --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_partial_plugin.so --dump-logits {O}/x.safetensors",
     "does not provide ple_embedding", "x.safetensors"},
    {"run_record_under_a_file", "run -m {T} -p hi -n 1 --record {D}/blocker/rec", "{D}/blocker/rec"},
    // chat (reads turns from stdin; /dev/null here)
    {"chat_missing_model", "chat -m {D}/nope", "{D}/nope"},
    {"chat_config_wrong_type", "chat -m {D}/m_cfg_type", "text_config.hidden_size"},
    {"chat_truncated_safetensors", "chat -m {D}/m_trunc", "m_trunc/model.safetensors"},
    {"chat_max_seq_negative", "chat -m {M} --max-seq -3", "-3"},
    {"chat_max_seq_oversized", "chat -m {M} --max-seq 999999999", "--max-seq 999999999"},
    {"chat_threads_negative", "chat -m {M} --threads -1", "--threads -1"},
    {"chat_backend_plugin_missing", "chat -m {M} --backend plugin:{D}/nope.so", "{D}/nope.so"},
    {"chat_image_empty", "chat -m {T} --image {D}/empty", "{D}/empty"},
    {"chat_runtime_config_truncated", "chat -m {M} --config {D}/trunc.yaml", "{D}/trunc.yaml"},
    {"chat_profile_unknown", "chat -m {M} --profile bogus", "--profile bogus"},
    {"chat_set_wrong_type", "chat -m {M} --set max_seq=lots", "max_seq=lots"},
    {"chat_system_not_utf8", "chat -m {M} --system {BAD}", "--system"},
    {"chat_template_missing", "chat -m {M} --chat-template {D}/nope", "{D}/nope"},
    {"chat_template_broken", "chat -m {M} --chat-template {D}/bad.jinja", "{D}/bad.jinja:1"},
    {"chat_template_var_not_json", "chat -m {M} --jinja --var enable_thinking=tru", "enable_thinking"},
    {"chat_var_without_template", "chat -m {M} --var enable_thinking=true", "--var"},
    // serve (refused before it listens)
    {"serve_missing_model", "serve -m {D}/nope --port 0", "{D}/nope"},
    {"serve_truncated_safetensors", "serve -m {D}/m_trunc --port 0", "m_trunc/model.safetensors"},
    {"serve_port_out_of_range", "serve -m {M} --port 70000", "--port 70000"},
    {"serve_backend_unknown", "serve -m {M} --port 0 --backend gpu", "--backend 'gpu'"},
    {"serve_slots_zero", "serve -m {M} --port 0 --slots 0", "--slots 0"},
    {"serve_profile_unknown", "serve -m {M} --port 0 --profile bogus", "--profile bogus"},
    {"serve_chat_template_missing", "serve -m {T} --port 0 --chat-template {D}/nope.jinja", "{D}/nope.jinja"},
    {"serve_chat_template_kwargs_not_object", "serve -m {M} --port 0 --chat-template-kwargs '[1]'", "--chat-template-kwargs"},
    {"serve_chat_template_kwargs_not_json", "serve -m {M} --port 0 --chat-template-kwargs '{x'", "--chat-template-kwargs"},
    {"serve_reasoning_format_unknown", "serve -m {M} --port 0 --reasoning-format hidden", "--reasoning-format hidden"},
    {"serve_reasoning_budget_unsupported", "serve -m {M} --port 0 --reasoning-budget 512", "--reasoning-budget 512"},
    {"serve_api_key_empty", "serve -m {M} --port 0 --api-key 'a,,b'", "--api-key"},
    {"serve_api_key_file_missing", "serve -m {M} --port 0 --api-key-file {D}/nope.keys", "{D}/nope.keys"},
    {"serve_chat_template_broken", "serve -m {T} --port 0 --chat-template {D}/bad.jinja", "{D}/bad.jinja:1"},
    {"serve_queue_negative", "serve -m {M} --port 0 --queue -1", "--queue -1"},
    {"serve_max_body_zero", "serve -m {M} --port 0 --max-body 0", "--max-body 0"},
    {"serve_max_seq_oversized", "serve -m {M} --port 0 --max-seq 999999999", "--max-seq 999999999"},
    {"serve_runtime_config_truncated", "serve -m {M} --port 0 --config {D}/trunc.yaml", "{D}/trunc.yaml"},
    {"serve_threads_negative", "serve -m {M} --port 0 --threads -1", "--threads -1"},
    {"serve_embeddings_unsupported", "serve -m {M} --port 0 --embeddings", "--embeddings"},
    {"serve_tls_unsupported", "serve -m {M} --port 0 --ssl-key-file {D}/k.pem", "--ssl-key-file"},
    {"serve_timeout_zero", "serve -m {M} --port 0 -to 0", "--timeout"},
    // inputs
    {"inputs_missing_model", "inputs -m {D}/nope --prompt hi --out {O}/x.safetensors", "{D}/nope", "x.safetensors"},
    {"inputs_config_wrong_type", "inputs -m {D}/m_cfg_type --prompt hi --out {O}/x.safetensors", "text_config.hidden_size",
     "x.safetensors"},
    {"inputs_tokenizer_empty", "inputs -m {D}/m_tok_empty --prompt hi --out {O}/x.safetensors", "m_tok_empty/tokenizer.json",
     "x.safetensors"},
    {"inputs_prompt_not_utf8", "inputs -m {M} --prompt {BAD} --out {O}/x.safetensors", "--prompt", "x.safetensors"},
    {"inputs_max_seq_negative", "inputs -m {M} --prompt hi --max-seq -1 --out {O}/x.safetensors", "-1", "x.safetensors"},
    {"inputs_max_seq_oversized", "inputs -m {M} --prompt hi --max-seq 999999999 --out {O}/x.safetensors", "999999999",
     "x.safetensors"},
    {"inputs_profile_unknown", "inputs -m {M} --prompt hi --profile bogus --out {O}/x.safetensors", "bogus", "x.safetensors"},
    {"inputs_profile_truncated", "inputs -m {M} --prompt '<|image|>' --image {F}/images/tiny3x7.png --profile {D}/trunc.json --out {O}/x.safetensors",
     "{D}/trunc.json", "x.safetensors"},
    {"inputs_messages_not_utf8", "inputs -m {M} --messages {D}/msgs_utf8.json --out {O}/x.safetensors", "{D}/msgs_utf8.json",
     "x.safetensors"},
    {"inputs_image_empty", "inputs -m {M} --prompt hi --image {D}/empty --out {O}/x.safetensors", "{D}/empty", "x.safetensors"},
    {"inputs_runtime_config_wrong_type", "inputs -m {M} --prompt hi --config {D}/type.yaml --out {O}/x.safetensors", "max_seq",
     "x.safetensors"},
    {"inputs_out_under_a_file", "inputs -m {T} --prompt hi --out {D}/blocker/x.safetensors", "{D}/blocker/x.safetensors"},
    {"inputs_out_under_proc", "inputs -m {M} --prompt hi --out /proc/x.safetensors", "/proc/x.safetensors"},
    // bench
    {"bench_missing_model", "bench -m {D}/nope -p 4 -n 2", "{D}/nope"},
    {"bench_truncated_safetensors", "bench -m {D}/m_trunc -p 4 -n 2", "m_trunc/model.safetensors"},
    {"bench_config_wrong_type", "bench -m {D}/m_cfg_type -p 4 -n 2", "text_config.hidden_size"},
    {"bench_prompt_len_negative", "bench -m {M} -p -5 -n 2", "-p -5"},
    {"bench_decode_tokens_negative", "bench -m {M} -p 4 -n -5", "-n -5"},
    {"bench_max_seq_negative", "bench -m {M} -p 4 -n 2 --max-seq -1", "--max-seq: Value -1 not in range"},
    {"bench_prompt_len_oversized", "bench -m {M} -p 999999999 -n 2", "-p 999999999"},
    {"bench_max_seq_oversized", "bench -m {M} -p 4 -n 2 --max-seq 999999999", "--max-seq 999999999"},
    {"bench_threads_negative", "bench -m {M} -p 4 -n 2 --threads -1", "--threads -1"},
    {"bench_backend_unknown", "bench -m {M} -p 4 -n 2 --backend gpu", "--backend 'gpu'"},
    {"bench_backend_plugin_missing", "bench -m {M} -p 4 -n 2 --backend plugin:{D}/nope.so", "{D}/nope.so"},
    // backend-check
    {"backend_check_cpu_backend", "backend-check --backend cpu -m {M} -p hi --report {O}/r.json", "--backend must be plugin",
     "r.json"},
    {"backend_check_plugin_missing", "backend-check --backend plugin:{D}/nope.so -m {M} -p hi --report {O}/r.json",
     "{D}/nope.so", "r.json"},
    {"backend_check_plugin_not_a_shared_object", "backend-check --backend plugin:{D}/empty -m {M} -p hi --report {O}/r.json",
     "{D}/empty: cannot load", "r.json"},
    {"backend_check_missing_model",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {D}/nope -p hi --report {O}/r.json",
     "{D}/nope", "r.json"},
    {"backend_check_no_inputs",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {M} --report {O}/r.json",
     "give --record DIR", "r.json"},
    {"backend_check_record_missing",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {M} --record {D}/nope --report {O}/r.json",
     "{D}/nope", "r.json"},
    {"backend_check_record_truncated",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {M} --record {D}/rec_bad --report {O}/r.json",
     "rec_bad/index.json", "r.json"},
    {"backend_check_tolerance_unknown",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {M} -p hi --tolerance loose --report {O}/r.json",
     "--tolerance 'loose'", "r.json"},
    {"backend_check_decode_steps_negative",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {M} -p hi --decode-steps -1 --report {O}/r.json",
     "--decode-steps -1", "r.json"},
    {"backend_check_prompt_ids_out_of_vocabulary",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {M} --prompt-ids 99999999 --report {O}/r.json",
     "99999999", "r.json"},
    {"backend_check_report_under_a_file",
     "backend-check --backend plugin:" STATICLM_PLUGIN_DIR "/libstaticlm_cpu_plugin.so -m {T} -p hi --max-seq 16 --report {D}/blocker/r.json",
     "{D}/blocker/r.json"},
    // quantize
    {"quantize_missing_model", "quantize -m {D}/nope --scheme q8 --out {O}/q", "{D}/nope", "q/"},
    {"quantize_truncated_safetensors", "quantize -m {D}/m_trunc --scheme q8 --out {O}/q", "m_trunc/model.safetensors", "q/"},
    {"quantize_config_wrong_type", "quantize -m {D}/m_cfg_type --scheme q8 --out {O}/q", "text_config.hidden_size", "q/"},
    {"quantize_weights_wrong_shape", "quantize -m {D}/m_cfg_shape --scheme q8 --out {O}/q", "embed_tokens.weight", "q/"},
    {"quantize_unknown_scheme", "quantize -m {M} --scheme q3 --out {O}/q", "q3", "q/"},
    {"quantize_nan_weight", "quantize -m {D}/m_nan --scheme q4 --out {O}/q",
     "tensor model.language_model.layers.0.mlp.down_proj.weight holds NaN at row 0, column 3", "q/"},
    {"run_dump_logits_empty_path", "run -m {M} -p hi -n 1 --dump-logits ''", "--dump-logits: the path is empty"},
    {"run_record_empty_path", "run -m {M} -p hi -n 1 --record=", "--record: the path is empty"},
    {"preprocess_out_empty_path", "preprocess --image {F}/images/tiny3x7.png --out ''", "--out: the path is empty"},
    {"inspect_report_inside_record", "inspect -m {M} --record {O}/rec --report {O}/rec/index.json",
     "inside the --record directory"},
    // A plug-in cut short: dlopen would map past its end (SIGBUS); refused before.
    {"run_plugin_cut_short", "run -m {T} -p hi -n 1 --backend plugin:{D}/cut.so", "{D}/cut.so: the file is cut short"},
    {"run_seed_below_minus_one", "run -m {M} -p hi -n 1 --seed -2", "--seed -2"},
    {"run_nan_weight", "run -m {D}/m_nan -p hi -n 1", "NaN or +Inf values"},
    // The calls recorded before the failure are removed with the directory run made.
    {"run_record_nan_weight", "run -m {D}/m_nan -p hi -n 1 --record {O}/rec", "NaN or +Inf values"},
    {"inspect_record_nan_weight", "inspect -m {D}/m_nan -p hi --record {O}/rec", "NaN or +Inf values"},
    {"quantize_already_quantized", "quantize -m {Q} --scheme q8 --out {O}/q", "{Q}", "q/"},
    {"quantize_threads_negative", "quantize -m {M} --scheme q8 --threads -1 --out {O}/q", "--threads", "q/"},
    {"quantize_out_under_a_file", "quantize -m {M} --scheme q8 --out {D}/blocker/q", "{D}/blocker/q"},
    {"quantize_out_under_proc", "quantize -m {M} --scheme q8 --out /proc/staticlm-q", "/proc/staticlm-q"},
    // quant-report
    {"quant_report_missing_quantized", "quant-report -m {M} -q {D}/nope --out {O}/r.md", "{D}/nope", "r.md"},
    {"quant_report_truncated_base", "quant-report -m {D}/m_trunc -q {Q} --out {O}/r.md", "m_trunc/model.safetensors", "r.md"},
    {"quant_report_quantized_is_base", "quant-report -m {M} -q {M} --out {O}/r.md", "{M}", "r.md"},
    {"quant_report_prompts_missing", "quant-report -m {M} -q {Q} --prompts {D}/nope --out {O}/r.md", "{D}/nope", "r.md"},
    {"quant_report_prompts_empty", "quant-report -m {M} -q {Q} --prompts {D}/empty --out {O}/r.md", "{D}/empty", "r.md"},
    {"quant_report_prompts_not_utf8", "quant-report -m {M} -q {Q} --prompts {D}/nonutf8.txt --out {O}/r.md", "{D}/nonutf8.txt",
     "r.md"},
    {"quant_report_max_seq_negative", "quant-report -m {M} -q {Q} --max-seq -1 --out {O}/r.md", "--max-seq: Value -1 not in range", "r.md"},
    {"quant_report_max_seq_oversized", "quant-report -m {M} -q {Q} --max-seq 999999999 --out {O}/r.md", "999999999", "r.md"},
    {"quant_report_threads_negative", "quant-report -m {M} -q {Q} --threads -1 --out {O}/r.md", "--threads -1", "r.md"},
    {"quant_report_out_under_a_file", "quant-report -m {T} -q {Q} --out {D}/blocker/r.md", "{D}/blocker/r.md"},
    // replay
    {"replay_missing_recording", "replay --record {D}/nope --report {O}/r.json", "{D}/nope", "r.json"},
    {"replay_index_missing", "replay --record {D}/rec_noidx --report {O}/r.json", "rec_noidx/index.json", "r.json"},
    {"replay_index_truncated", "replay --record {D}/rec_bad --report {O}/r.json", "rec_bad/index.json", "r.json"},
    {"replay_index_wrong_type", "replay --record {D}/rec_type --report {O}/r.json", "rec_type/index.json", "r.json"},
    {"replay_tolerance_negative", "replay --record {D}/rec_type --tolerance -1 --report {O}/r.json", "--tolerance", "r.json"},
    // inspect
    {"inspect_missing_model", "inspect -m {D}/nope -p hi --report {O}/r.json", "{D}/nope", "r.json"},
    {"inspect_truncated_safetensors", "inspect -m {D}/m_trunc -p hi --report {O}/r.json", "m_trunc/model.safetensors", "r.json"},
    {"inspect_prompt_not_utf8", "inspect -m {M} -p {BAD} --report {O}/r.json", "--prompt", "r.json"},
    {"inspect_profile_unknown", "inspect -m {M} -p hi --profile bogus --report {O}/r.json", "--profile bogus", "r.json"},
    {"inspect_steps_out_of_range", "inspect -m {M} -p hi --steps 9 --report {O}/r.json", "--steps 9", "r.json"},
    {"inspect_steps_not_numbers", "inspect -m {M} -p hi --steps x --report {O}/r.json", "--steps x", "r.json"},
    {"inspect_decode_steps_negative", "inspect -m {M} -p hi --decode-steps -1 --report {O}/r.json", "--decode-steps -1", "r.json"},
    {"inspect_max_seq_oversized", "inspect -m {M} -p hi --max-seq 999999999 --report {O}/r.json", "--max-seq 999999999", "r.json"},
    {"inspect_golden_truncated", "inspect -m {M} -p hi --reference golden:{D}/trunc.safetensors --report {O}/r.json",
     "{D}/trunc.safetensors", "r.json"},
    {"inspect_backend_unknown", "inspect -m {M} -p hi --backend gpu --report {O}/r.json", "--backend 'gpu'", "r.json"},
    {"inspect_backend_plugin_missing", "inspect -m {M} -p hi --backend plugin:{D}/nope.so --report {O}/r.json", "{D}/nope.so",
     "r.json"},
    {"inspect_reference_unknown", "inspect -m {M} -p hi --reference bogus --report {O}/r.json", "bogus", "r.json"},
    {"inspect_prompt_ids_not_numbers", "inspect -m {M} --prompt-ids 1,x --report {O}/r.json", "\"x\"", "r.json"},
    {"inspect_report_under_a_file", "inspect -m {T} -p hi --steps 1 --report {D}/blocker/r.json", "{D}/blocker/r.json"},
    {"inspect_record_under_a_file", "inspect -m {M} -p hi --steps 1 --record {D}/blocker/rec", "{D}/blocker/rec"},
};

void write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
  if (!f) throw std::runtime_error("cannot write " + path);
}

// Every regular file under dir (recursively), by relative path, with its bytes; directories as "/".
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    files[rel] = e.is_directory() ? std::string("/") : read_file(e.path().string());
  }
  return files;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// The shared inputs: a good tiny checkpoint, its q8 copy, and the crafted bad files.
class Catalogue : public ::testing::TestWithParam<Row> {
 protected:
  // ctest runs every row in its own process, so the inputs are made once per build of the
  // staticlm and test binaries (a directory next to staticlm, named after its size and the two
  // mtimes), under a file lock; a process that finds them complete only reads them.
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    const fs::path bin(STATICLM_BIN);
    // Stamped by both binaries: a new staticlm, or a test binary that makes other inputs.
    const std::string stamp = std::to_string(fs::last_write_time(bin).time_since_epoch().count()) + "-" +
                              std::to_string(fs::last_write_time("/proc/self/exe").time_since_epoch().count());
    const std::string shared = (bin.parent_path() / ("catalogue-inputs-" + std::to_string(fs::file_size(bin)) + "-" +
                                                     stamp)).string();
    const int lock = open((shared + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
      made_.exit_code = 1;
      made_.err = "cannot lock " + shared + ".lock";
      return;
    }
    made_ = test::CommandResult{};
    made_.exit_code = 0;  // complete inputs from an earlier process
    if (!fs::exists(shared + "/complete")) {
      const std::string building = shared + ".building";
      fs::remove_all(building);
      fs::create_directories(building);
      make_inputs(building);
      if (made_.exit_code == 0) {
        write(building + "/complete", "");
        fs::remove_all(shared);
        fs::rename(building, shared);
        remove_stale_inputs(bin.parent_path(), fs::path(shared).filename().string());
      }
    }
    close(lock);  // releases the lock
    dir_path_ = shared;
  }
  // Inputs made for earlier builds (239 MB each) would pile up in the build directory.
  static void remove_stale_inputs(const fs::path& dir, const std::string& current) {
    const std::string prefix = "catalogue-inputs-";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) != 0 || name.rfind(current, 0) == 0) continue;
      fs::remove_all(e.path(), ec);
    }
  }
  static void make_inputs(const std::string& d) {
    const std::string m = d + "/m";
    made_ = test::run_staticlm("make-model --preset tiny --seed 1 --out " + m);
    if (made_.exit_code != 0) return;
    made_ = test::run_staticlm("quantize -m " + m + " --scheme q8 --out " + d + "/q8");
    if (made_.exit_code != 0) return;

    write(d + "/empty", "");
    write(d + "/nonutf8.txt", "\xff\xfe bad \xc3\n");
    write(d + "/long_run.txt", std::string(8 << 20, 'a'));
    write(d + "/bad_arg", "\xff\xfe");
    write(d + "/blocker", "a regular file, so nothing can be created under it\n");
    write(d + "/trunc.json", "[{\"role\": \"user\", \"content\": \"hi\"");
    write(d + "/msgs_type.json", "{\"messages\": 5}");
    std::string wide = "[{\"role\": \"user\", \"content\": \"x\"";
    for (int i = 0; i < 10001; ++i) wide += ", \"k" + std::to_string(i) + "\": 0";
    write(d + "/wide.json", wide + "}]");
    {
      const std::string plugin = read_file(std::string(STATICLM_PLUGIN_DIR) + "/libstaticlm_cpu_plugin.so");
      write(d + "/cut.so", plugin.substr(0, 4096));
    }
    write(d + "/big_int.json", "[{\"role\": \"user\", \"content\": \"x\", \"n\": 18446744073709551616}]");
    write(d + "/msgs_utf8.json", "[{\"role\": \"user\", \"content\": \"\xff\xfe\"}]");
    write(d + "/number.jsonl", "5\n");
    write(d + "/blank_line.jsonl", "\"a\"\n\n\"b\"\n");
    write(d + "/trunc.yaml", "max_seq: [1, 2\n");
    write(d + "/type.yaml", "max_seq: lots\n");
    write(d + "/dup.yaml", "max_seq: 64\nmax_seq: 128\n");
    write(d + "/two_docs.yaml", "max_seq: 64\n---\nmax_seq: 128\n");
    write(d + "/comma.yaml", ",\n");
    write(d + "/self_alias.yaml", "max_seq: 64\nvision_profile: &a {name: *a}\n");
    write(d + "/overlong.yaml", "max_seq: \"\xc0\xaf \xed\xa0\x80 \xc3\xa9\"\n");
    // Six levels of ten aliases each: 10^6 paths through a 60-node file.
    std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i <= 6; ++i) {
      const std::string prev = "*a" + std::to_string(i - 1);
      bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
      for (int j = 0; j < 10; ++j) bomb += (j ? ", " : "") + prev;
      bomb += "]\n";
    }
    write(d + "/alias_bomb.yaml", bomb);
    write(d + "/huge.yaml", "x: [" + std::string(1 << 20, '0') + "]\n");
    write(d + "/bad.jinja", "{% if %}");
    write(d + "/recursive.jinja", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    std::string sum = "1";
    for (int i = 0; i < 149; ++i) sum += " + 1";
    write(d + "/endless.jinja", "{% for a in range(100000) %}{{ " + sum + " }}{% endfor %}");
    write(d + "/huge.jinja", "{{ 'x' * 4000000000 }}");
    write(d + "/deep.jinja", "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}");
    write(d + "/overflow.jinja", "{{ 3 ** 4000 }}");
    write(d + "/deep.json", "[{\"role\": \"user\", \"content\": " + std::string(100000, '[') + std::string(100000, ']') + "}]");
    const std::string weights = read_file(m + "/model.safetensors");
    write(d + "/trunc.safetensors", weights.substr(0, 1000000));

    nlohmann::json config = nlohmann::json::parse(read_file(m + "/config.json"));
    auto with = [&](const char* field, const nlohmann::json& value) {
      nlohmann::json c = config;
      c["text_config"][field] = value;
      return c.dump();
    };
    variant(d, "m_st_dir", "model.safetensors", "");
    fs::remove(d + "/m_st_dir/model.safetensors");
    fs::create_directory(d + "/m_st_dir/model.safetensors");  // a directory where the weights belong
    fs::create_directory(d + "/a_dir");
    variant(d, "m_cfg_empty", "config.json", "");
    variant(d, "m_cfg_type", "config.json", with("hidden_size", "64"));
    variant(d, "m_cfg_huge", "config.json", with("hidden_size", 1000000000000LL));
    variant(d, "m_cfg_shape", "config.json", with("hidden_size", 128));
    variant(d, "m_cfg_utf8", "config.json", "{\"model_type\": \"\xff\xfe\"}");
    variant(d, "m_trunc", "model.safetensors", weights.substr(0, 1000000));
    variant(d, "m_tok_empty", "tokenizer.json", "");
    {  // one bf16 NaN at row 0, column 3 of a layer's down projection
      std::uint64_t n = 0;
      std::memcpy(&n, weights.data(), 8);
      const auto header = nlohmann::json::parse(weights.substr(8, n));
      const std::string key = "model.language_model.layers.0.mlp.down_proj.weight";
      std::string nan = weights;
      const std::size_t at = 8 + n + header.at(key).at("data_offsets")[0].get<std::size_t>() + 2 * 3;
      nan[at] = static_cast<char>(0xC0);
      nan[at + 1] = static_cast<char>(0x7F);
      variant(d, "m_nan", "model.safetensors", nan);
    }

    for (const char* r : {"rec_noidx", "rec_bad", "rec_type"}) fs::create_directory(d + "/" + r);
    write(d + "/rec_bad/index.json", "{\n");
    write(d + "/rec_type/index.json", "{\"format\": \"staticlm-record\", \"version\": 1, \"calls\": 5}\n");
  }
  void SetUp() override {
    ASSERT_FALSE(test::gemma3_tokenizer_path().empty()) << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
    ASSERT_EQ(made_.exit_code, 0) << made_.err;
    ASSERT_FALSE(dir_path_.empty());
  }

  // A copy of the good checkpoint in `d` (links to its files) with one file replaced.
  void static variant(const std::string& d, const std::string& name, const std::string& file, const std::string& bytes) {
    const std::string src = d + "/m", dst = d + "/" + name;
    fs::create_directory(dst);
    for (const auto& e : fs::directory_iterator(src)) {
      // Relative: the directory is renamed into place once complete.
      if (e.path().filename() != file) fs::create_symlink(fs::path("../m") / e.path().filename(), dst + "/" + e.path().filename().string());
    }
    write(dst + "/" + file, bytes);
  }

  static std::string expand(const std::string& s, const std::string& out_dir) {
    const std::string& d = dir_path_;
    std::string r = replace_all(s, "{M}", d + "/m");
    r = replace_all(r, "{T}", d + "/m_tok_empty");
    r = replace_all(r, "{Q}", d + "/q8");
    r = replace_all(r, "{D}", d);
    r = replace_all(r, "{O}", out_dir);
    r = replace_all(r, "{F}", test::fixture(""));
    r = replace_all(r, "{LONG}", std::string(6000, 'a'));
    return replace_all(r, "{BAD}", "\"$(cat " + d + "/bad_arg)\"");
  }

  // Runs the row and checks exit 2, the single error line, and that out_dir is as it was.
  static void check_refused(const Row& row, const std::string& out_dir) {
    const auto before = snapshot(out_dir);
    const auto r = test::run_staticlm(expand(row.args, out_dir));
    EXPECT_EQ(r.exit_code, 2) << "stderr: " << r.err;
    std::vector<std::string> lines, errors;
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);) {
      // Progress lines redraw with '\r'; the error must start a fresh line.
      lines.push_back(line);
      if (line.rfind("error: ", 0) == 0) errors.push_back(line);
    }
    ASSERT_EQ(errors.size(), 1u) << "expected exactly one \"error: \" line on stderr, got:\n" << r.err;
    EXPECT_EQ(lines.back(), errors[0]) << "the error must be the last line of stderr:\n" << r.err;
    EXPECT_TRUE(!r.err.empty() && r.err.back() == '\n') << r.err;
    const std::string expect = expand(row.expect, out_dir);
    EXPECT_NE(errors[0].find(expect), std::string::npos) << "the message should name \"" << expect << "\": " << errors[0];
    EXPECT_EQ(errors[0].find("internal"), std::string::npos) << errors[0];
    EXPECT_TRUE(snapshot(out_dir) == before) << "the output directory changed";
  }

  static std::string dir_path_;  // the shared inputs
  static test::CommandResult made_;
};
std::string Catalogue::dir_path_;
test::CommandResult Catalogue::made_;

std::string subcommand_of(const Row& row) {
  const std::string args = row.args;
  return args.substr(0, args.find(' '));
}

// The subcommands `staticlm --help` lists, read from its "Subcommands:" section.
std::vector<std::string> listed_subcommands() {
  const auto help = test::run_staticlm("--help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  std::vector<std::string> names;
  std::istringstream in(help.out);
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Subcommands:", 0) == 0 || line.rfind("SUBCOMMANDS:", 0) == 0) {
      in_section = true;
      continue;
    }
    if (!in_section) continue;
    if (line.empty() || line.rfind("  ", 0) != 0) {
      if (!names.empty()) break;
      continue;
    }
    const std::size_t start = line.find_first_not_of(' ');
    names.push_back(line.substr(start, line.find(' ', start) - start));
  }
  return names;
}

void PrintTo(const Row& row, std::ostream* os) { *os << row.args; }

TEST_P(Catalogue, RefusedWithExit2OneLineAndNothingWritten) {
  const Row& row = GetParam();
  // A row for a subcommand this build does not list is skipped, not failed; the coverage test
  // below holds every listed subcommand to its rows.
  static const std::vector<std::string> listed = listed_subcommands();
  if (std::find(listed.begin(), listed.end(), subcommand_of(row)) == listed.end()) {
    GTEST_SKIP() << subcommand_of(row) << " is not a subcommand of this build";
  }
  const test::TempDir scratch;  // the shared inputs stay untouched
  const std::string out_dir = scratch.file(std::string("out_") + row.name);
  fs::create_directory(out_dir);
  {
    SCOPED_TRACE("into an empty output directory");
    check_refused(row, out_dir);
    EXPECT_TRUE(fs::is_empty(out_dir)) << "a failing command left a file behind";
  }
  const std::string out = row.out;
  if (out.empty()) return;
  SCOPED_TRACE("over an existing output");
  if (out.back() == '/') {
    fs::create_directory(out_dir + "/" + out);
    write(out_dir + "/" + out + "config.json", "pre-existing output\n");
  } else {
    write(out_dir + "/" + out, "pre-existing output\n");
  }
  check_refused(row, out_dir);
}

INSTANTIATE_TEST_SUITE_P(BadInput, Catalogue, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& info) { return std::string(info.param.name); });

TEST(BadInputCatalogue, CoversEverySubcommandThatHelpLists) {
  const std::vector<std::string> listed = listed_subcommands();
  ASSERT_GE(listed.size(), 14u) << "could not read the subcommands from staticlm --help";
  std::map<std::string, int> rows;
  for (const Row& row : kRows) ++rows[subcommand_of(row)];
  for (const std::string& name : listed) {
    EXPECT_GE(rows[name], 3) << "subcommand '" << name << "' has fewer than 3 rows in the bad-input catalogue";
  }
}

}  // namespace
}  // namespace staticlm
