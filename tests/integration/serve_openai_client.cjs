// The npm `openai` client against `staticlm serve` (tests/integration/serve_test.cc):
//   node serve_openai_client.cjs DEPS_DIR BASE_URL MODEL
// Prints one JSON line: the non-streamed and the streamed reply to the same greedy request, the
// usage and finish reason of the first, the HTTP status of a request with a bad field, the models
// listed and the one retrieved by id, the chat logprobs' tokens of the greedy reply, and a text
// completion (whole and streamed) of the raw prompt "<bos>Hello there".
const path = require('path');
const mod = require(path.join(process.argv[2], 'openai', 'node_modules', 'openai'));
const OpenAI = mod.OpenAI || mod.default || mod;

async function main() {
  const client = new OpenAI({ baseURL: process.argv[3], apiKey: 'not-needed', maxRetries: 0 });
  const request = {
    model: process.argv[4],
    messages: [{ role: 'user', content: 'Hello there' }],
    temperature: 0,
    max_tokens: 8,
  };
  const whole = await client.chat.completions.create(request);
  let streamed = '';
  let chunks = 0;
  const stream = await client.chat.completions.create({ ...request, stream: true });
  for await (const chunk of stream) {
    chunks += 1;
    const delta = chunk.choices.length > 0 ? chunk.choices[0].delta : {};
    if (delta && typeof delta.content === 'string') streamed += delta.content;
  }
  let badStatus = 0;
  let badParam = null;
  try {
    await client.chat.completions.create({ ...request, top_p: 5 });
  } catch (e) {
    badStatus = e.status;
    badParam = e.error ? e.error.param : null;
  }
  const withLogprobs = await client.chat.completions.create({ ...request, logprobs: true, top_logprobs: 2 });
  const logprobTokens = withLogprobs.choices[0].logprobs.content.map((e) => e.token);
  const completion = await client.completions.create({
    model: process.argv[4], prompt: '<bos>Hello there', temperature: 0, max_tokens: 6,
  });
  let completionStreamed = '';
  const cstream = await client.completions.create({
    model: process.argv[4], prompt: '<bos>Hello there', temperature: 0, max_tokens: 6, stream: true,
  });
  for await (const chunk of cstream) {
    if (chunk.choices.length > 0 && typeof chunk.choices[0].text === 'string') completionStreamed += chunk.choices[0].text;
  }
  const models = await client.models.list();
  const retrieved = await client.models.retrieve(process.argv[4]);
  console.log(JSON.stringify({
    text: whole.choices[0].message.content,
    finish: whole.choices[0].finish_reason,
    usage: whole.usage,
    streamed,
    chunks,
    badStatus,
    badParam,
    models: models.data.map((m) => m.id),
    retrieved: retrieved.id,
    logprobTokens,
    logprobText: withLogprobs.choices[0].message.content,
    completion: completion.choices[0].text,
    completionObject: completion.object,
    completionStreamed,
  }));
}

main().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
