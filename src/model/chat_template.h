// The Jinja chat template make-model ships as chat_template.jinja: the E2B revision's core of
// spec/gemma4.md 5.5 (BOS, optional system turn with <|think|>, <|turn>role ... <turn|> turns,
// image parts as <|image|>, the generation prompt). It lets Hugging Face's processor render
// prompts for a made model exactly as staticlm's chat format does.
#pragma once

#include <string>

namespace staticlm {

const std::string& gemma4_chat_template();

}  // namespace staticlm
