"""Official `openai` Python SDK against BASE_URL (argv[1]); prints what the SDK parsed, as JSON.

The proxy is reached through HTTPS_PROXY and trusted through SSL_CERT_FILE, exactly as
an agent would: nothing here knows about agentci. Run by tests/it/sdk_interop.rs.
"""
import json
import os
import sys

import openai

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "get_time", "description": "Time in a zone",
     "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}},
]


def main():
    client = openai.OpenAI(
        base_url=sys.argv[1],
        max_retries=0,
        default_headers={"X-Planted-Token": os.environ["PLANTED_HEADER_TOKEN"]},
    )
    out = {}
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]

    # Step 0, plain: two parallel tool calls.
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    out["chat_plain"] = first.model_dump()

    # Step 2: send both tool results back; the fake answers in text.
    msg = first.choices[0].message
    messages.append(msg.model_dump(exclude_none=True))
    for call in msg.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"result of {call.function.name}"})
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    out["chat_tool_loop"] = second.choices[0].message.content

    # Streamed, with the usage chunk; the SDK's stream helper assembles tool-call deltas.
    with client.chat.completions.stream(
        model="gpt-4o-mini", messages=messages[:1], tools=TOOLS, stream_options={"include_usage": True}
    ) as stream:
        chunks = [event.chunk.model_dump() for event in stream if event.type == "chunk"]
        final = stream.get_final_completion()
    out["chat_stream_chunks"] = chunks
    out["chat_stream_final"] = final.model_dump()

    # Responses API, plain and streamed.
    out["responses_plain"] = client.responses.create(
        model="gpt-4.1-mini", input="What's the weather in Paris?",
        tools=[{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    ).model_dump()
    events = client.responses.create(model="gpt-4.1-mini", input="Say hello", stream=True)
    out["responses_stream"] = [e.model_dump() for e in events]

    print(json.dumps(out, sort_keys=True, indent=1))


if __name__ == "__main__":
    main()
