// What one render of a chat template may use. A template is a program that comes with a
// downloaded checkpoint (or a --chat-template file, or a serve request's conversation): without
// limits a few lines of it recurse until the stack overflows, loop for hours, or build strings of
// gigabytes. Each limit is far above what published chat templates need (they render a
// conversation in thousands of steps, nest a few levels, and print what the messages hold), and
// each is named in the error a template that passes it gets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "text/jinja/value.h"

namespace staticlm::jinja {

inline constexpr int kMaxSyntaxDepth = 200;               // nested expressions and blocks, when parsed
inline constexpr int kMaxCallDepth = 100;                 // macro calls inside macro calls
inline constexpr int kMaxEvalDepth = 2000;                // expressions and statements evaluated inside each other
inline constexpr int kMaxDataDepth = 256;                 // lists and dicts inside each other
#ifdef STATICLM_FUZZING
// Fuzz builds (CMake's STATICLM_FUZZ): sanitizers make a step ~20x slower, and libFuzzer's
// -timeout applies to each input.
inline constexpr std::int64_t kMaxSteps = 500'000;
#else
inline constexpr std::int64_t kMaxSteps = 5'000'000;      // statements, expressions and loop rounds of one render (~1 s)
#endif
// Published templates walk the conversation once for each message in places (gpt-oss looks
// ahead of each tool call, Command R7B numbers each tool result by a scan): their steps grow with
// the square of the messages. A render may take kMaxSteps plus kStepsPerItemPair for each pair
// of the items its messages, tools and documents hold, up to kMaxStepsWithItems:
// 1,063 messages of tool calls (a 25k-token gpt-oss prompt) need about 5.3 million steps.
inline constexpr std::int64_t kStepsPerItemPair = 25;
inline constexpr std::int64_t kMaxStepsWithItems = 20 * kMaxSteps;
// The step limit of a render whose list variables hold `items` items.
std::int64_t max_render_steps(std::int64_t items);
inline constexpr std::int64_t kLoopRoundSteps = 10;       // what one for-loop round counts (it costs ~10 expressions)
inline constexpr std::size_t kMaxStringBytes = 32u << 20;  // one string, the output included
inline constexpr std::size_t kMaxListItems = 1u << 20;    // one list (or the characters a loop walks)
inline constexpr std::size_t kMaxBuiltBytes = 256u << 20;  // all strings and lists one render builds

// The counters of the render running on this thread. Size checks apply everywhere; steps and
// built bytes are counted only while a render runs.
class RenderBudget {
 public:
  // Becomes this thread's current budget, allowing `max_steps` steps.
  explicit RenderBudget(std::int64_t max_steps = kMaxSteps);
  ~RenderBudget();  // restores the previous one, and empties the render's namespaces (see adopt)
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  static RenderBudget* current();
  // `n` more steps (one statement or expression is one); fails past the budget's steps.
  void step(std::int64_t n = 1);
  // `bytes` more built; fails past kMaxBuiltBytes.
  void charge(std::size_t bytes);
  // A namespace made during the render: a namespace can hold itself, and such a cycle would
  // never be freed; they are emptied when the render ends.
  void adopt(const Value& ns) { namespaces_.push_back(ns); }

 private:
  RenderBudget* previous_;
  std::int64_t steps_ = 0, max_steps_;
  std::size_t built_ = 0;
  std::vector<Value> namespaces_;
};

// Fail (a template error naming the limit and `what`) when a string of `bytes` would pass
// kMaxStringBytes; otherwise charge `charged` (default: all of it) to the current render.
void check_string_size(std::size_t bytes, const char* what, std::size_t charged = SIZE_MAX);
// The same for a list of `items` items holding `bytes` of strings.
void check_list_size(std::size_t items, std::size_t bytes, const char* what);
// Only the count (for a sequence walked, not built).
void check_list_items(std::size_t items, const char* what);
// A width argument (center, ljust, indent, a format's field width): one string of that many
// bytes at least. Negative widths are no-ops and pass.
void check_width(std::int64_t width, const char* what);
// a * b for the sizes above, saturated instead of wrapping.
std::size_t saturated_product(std::size_t a, std::size_t b);

// int(x) of a float: truncation toward zero; fails when x has no 64-bit integer (inf, nan, 1e300).
std::int64_t checked_float_to_int(double x, const char* what);

// Python's int arithmetic on 64 bits: a result that does not fit fails ("integer overflow in
// OP") instead of wrapping (Python would switch to a big integer; no chat template needs one).
std::int64_t checked_int(const char* op, std::int64_t a, std::int64_t b);

}  // namespace staticlm::jinja
