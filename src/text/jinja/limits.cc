#include "text/jinja/limits.h"

#include <string>


namespace staticlm::jinja {
namespace {
thread_local RenderBudget* g_current = nullptr;
}  // namespace

std::int64_t max_render_steps(std::int64_t items) {
  const std::int64_t pairs_room = (kMaxStepsWithItems - kMaxSteps) / kStepsPerItemPair;
  if (items <= 0) return kMaxSteps;
  if (items > pairs_room / items) return kMaxStepsWithItems;  // items * items past the room
  return kMaxSteps + kStepsPerItemPair * items * items;
}

RenderBudget::RenderBudget(std::int64_t max_steps) : previous_(g_current), max_steps_(max_steps) { g_current = this; }

RenderBudget::~RenderBudget() {
  g_current = previous_;
  // Items are moved out first: freeing them may free other namespaces of this list.
  for (const Value& ns : namespaces_) {
    std::vector<std::pair<Value, Value>> items = std::move(ns.dict_object().items);
    ns.dict_object().items.clear();
  }
}

RenderBudget* RenderBudget::current() { return g_current; }

void RenderBudget::step(std::int64_t n) {
  steps_ += n;
  if (steps_ > max_steps_) {
    fail("the template ran more than " + std::to_string(max_steps_) + " steps (the limit" +
         (max_steps_ > kMaxSteps ? " for the number of messages and tools it was given)" : ")"));
  }
}

void RenderBudget::charge(std::size_t bytes) {
  built_ += bytes;
  if (built_ > kMaxBuiltBytes) {
    fail("the template built more than " + std::to_string(kMaxBuiltBytes >> 20) + " MiB of strings and lists (the limit)");
  }
}

void check_string_size(std::size_t bytes, const char* what, std::size_t charged) {
  if (bytes > kMaxStringBytes) {
    fail(std::string(what) + ": a string of " + std::to_string(bytes) + " bytes is over the limit of " +
         std::to_string(kMaxStringBytes) + " bytes");
  }
  if (RenderBudget* b = RenderBudget::current()) b->charge(charged == SIZE_MAX ? bytes : charged);
}

void check_list_items(std::size_t items, const char* what) {
  if (items > kMaxListItems) {
    fail(std::string(what) + ": a list of " + std::to_string(items) + " items is over the limit of " +
         std::to_string(kMaxListItems) + " items");
  }
}

void check_list_size(std::size_t items, std::size_t bytes, const char* what) {
  check_list_items(items, what);
  if (RenderBudget* b = RenderBudget::current()) b->charge(saturated_product(items, sizeof(Value)) + bytes);
}

void check_width(std::int64_t width, const char* what) {
  if (width > 0) check_string_size(static_cast<std::uint64_t>(width), what);
}

std::size_t saturated_product(std::size_t a, std::size_t b) {
  std::size_t r;
  return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

std::int64_t checked_float_to_int(double x, const char* what) {
  // 2^63 is exact as a double; every double below it in magnitude converts.
  if (!(x > -9223372036854775808.0 && x < 9223372036854775808.0)) {
    fail(std::string(what) + ": " + python_float_repr(x) + " is outside the 64-bit integer range");
  }
  return static_cast<std::int64_t>(x);
}

std::int64_t checked_int(const char* op, std::int64_t a, std::int64_t b) {
  const std::string o = op;
  std::int64_t r = 0;
  bool overflow = false;
  if (o == "+") overflow = __builtin_add_overflow(a, b, &r);
  else if (o == "-") overflow = __builtin_sub_overflow(a, b, &r);
  else if (o == "*") overflow = __builtin_mul_overflow(a, b, &r);
  else if (o == "**") {
    // Square and multiply, every product checked; b >= 0 here.
    r = 1;
    std::int64_t base = a;
    for (std::int64_t e = b; e > 0 && !overflow; e >>= 1) {
      if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
      if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
    }
  } else {
    fail("unknown integer operator " + o);
  }
  if (overflow) {
    fail("integer overflow in " + std::to_string(a) + " " + o + " " + std::to_string(b) +
         " (integers are 64-bit here)");
  }
  return r;
}

}  // namespace staticlm::jinja
