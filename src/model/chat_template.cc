#include "model/chat_template.h"

namespace staticlm {

const std::string& gemma4_chat_template() {
  static const std::string kTemplate = R"JINJA({%- macro render_content(content, sep) -%}
{%- if content is string -%}{{ content | trim }}
{%- elif content is none -%}
{%- else -%}{%- for item in content -%}
{%- if item['type'] == 'text' -%}{{ item['text'] | trim }}{{ sep }}
{%- elif item['type'] == 'image' -%}<|image|>
{%- elif item['type'] == 'audio' -%}<|audio|>
{%- elif item['type'] == 'video' -%}<|video|>
{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{{ bos_token }}
{%- set has_system = messages | length > 0 and messages[0]['role'] in ['system', 'developer'] -%}
{%- if enable_thinking or has_system -%}
<|turn>system
{% if enable_thinking %}<|think|>{% endif %}
{%- if has_system %}{{ render_content(messages[0]['content'], ' ') | trim }}{% endif %}<turn|>
{% endif -%}
{%- for message in messages[(1 if has_system else 0):] -%}
<|turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}
{{ render_content(message['content'], '') }}<turn|>
{% endfor -%}
{%- if add_generation_prompt -%}
<|turn>model
{% endif -%}
)JINJA";
  return kTemplate;
}

}  // namespace staticlm
