"""Official `anthropic` Python SDK against BASE_URL (argv[1]); prints what the SDK parsed, as JSON.

Reached through HTTPS_PROXY, trusted through SSL_CERT_FILE. Run by tests/it/sdk_interop.rs.
"""
import json
import os
import sys

import anthropic

TOOLS = [
    {"name": "get_weather", "description": "Weather for a city",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}},
    {"name": "get_time", "description": "Time in a zone",
     "input_schema": {"type": "object", "properties": {"tz": {"type": "string"}}}},
]


def main():
    client = anthropic.Anthropic(
        base_url=sys.argv[1],
        max_retries=0,
        default_headers={"X-Planted-Token": os.environ["PLANTED_HEADER_TOKEN"]},
    )
    out = {}
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]

    first = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=messages, tools=TOOLS)
    out["plain"] = first.model_dump()

    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b.id, "content": f"result of {b.name}"}
        for b in first.content if b.type == "tool_use"
    ]})
    second = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=messages, tools=TOOLS)
    out["tool_loop"] = second.model_dump()

    # Streamed: the SDK accumulates text_delta and input_json_delta into the final message.
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=512, messages=messages[:1], tools=TOOLS) as stream:
        events = [e.type for e in stream]
        final = stream.get_final_message()
    out["stream_event_types"] = events
    out["stream_final"] = final.model_dump()

    print(json.dumps(out, sort_keys=True, indent=1))


if __name__ == "__main__":
    main()
