// Official `openai` Node SDK against BASE_URL (argv[2]), which is the agentci
// proxy's plain-HTTP base-URL route (Node's fetch ignores HTTPS_PROXY before 22.21).
// Prints what the SDK parsed, as JSON. Run by tests/it/sdk_interop.rs.
import OpenAI from "openai";

const TOOLS = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: { tz: { type: "string" } } } } },
];

const client = new OpenAI({
  baseURL: process.argv[2],
  maxRetries: 0,
  defaultHeaders: { "X-Planted-Token": process.env.PLANTED_HEADER_TOKEN },
});
const messages = [{ role: "user", content: "What's the weather in Paris?" }];
const out = {};

out.chat_plain = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools: TOOLS });

const stream = client.chat.completions.stream({
  model: "gpt-4o-mini", messages, tools: TOOLS, stream_options: { include_usage: true },
});
out.chat_stream_chunks = [];
for await (const chunk of stream) out.chat_stream_chunks.push(chunk);
out.chat_stream_final = await stream.finalChatCompletion();

const events = await client.responses.create({ model: "gpt-4.1-mini", input: "Say hello", stream: true });
out.responses_stream = [];
for await (const event of events) out.responses_stream.push(event);

console.log(JSON.stringify(out, null, 1));
