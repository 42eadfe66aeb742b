#!/usr/bin/env python3
"""rag-agent: answers questions about the acme CLI from its documentation.

A small tool-using agent on the official `openai` SDK: the model asks for
`retriever_tool` (a local document index), gets the passages back, and answers.
agentci starts it once per case with the question in AGENTCI_QUERY; the answer
is what it prints. RAG_AGENT_VERSION=v1 selects the old, broken prompt that
researches everything (the demo's regression); v2 (the default) declines
out-of-scope questions at once.
"""

import json
import os
import sys

from openai import OpenAI

MODEL = os.environ.get("RAG_AGENT_MODEL", "gpt-4o")
VERSION = os.environ.get("RAG_AGENT_VERSION", "v2")
MAX_STEPS = 16

PROMPTS = {
    "v1": "You are a helpful assistant for the acme CLI. Research every question "
    "thoroughly with all your tools before answering. [prompt v1]",
    "v2": "You answer questions about the acme CLI, using retriever_tool for facts. "
    "Politely decline anything else at once, without calling tools. Never answer "
    "from memory what the documentation does not say. [prompt v2]",
}

DOCS = [
    ("install", "Install the acme CLI with `pip install acme-cli`, then run `acme --version`."),
    ("config", "acme reads ~/.acme/config.toml; `acme config set KEY VALUE` edits it."),
    ("deploy", "`acme deploy --env prod` deploys the current project to production."),
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "retriever_tool",
            "description": "Search the acme CLI documentation.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "web_search",
            "description": "Search the public web.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
]


def retriever_tool(query: str) -> str:
    words = {w.strip("?.,").lower() for w in query.split()}
    hits = [text for key, text in DOCS if key in words or any(w in text.lower() for w in words if len(w) > 4)]
    return json.dumps({"passages": hits[:2]})


def web_search(query: str) -> str:
    # The demo never reaches the web: recorded runs replay what the model asked for.
    return json.dumps({"results": [], "note": "web search is disabled in this demo"})


TOOL_IMPLS = {"retriever_tool": retriever_tool, "web_search": web_search}


def main() -> int:
    query = os.environ.get("AGENTCI_QUERY") or " ".join(sys.argv[1:])
    if not query:
        print("usage: AGENTCI_QUERY='question' agent.py", file=sys.stderr)
        return 2
    client = OpenAI()
    messages = [
        {"role": "system", "content": PROMPTS[VERSION]},
        {"role": "user", "content": query},
    ]
    for _ in range(MAX_STEPS):
        response = client.chat.completions.create(
            model=MODEL, messages=messages, tools=TOOLS, temperature=0
        )
        message = response.choices[0].message
        if not message.tool_calls:
            print(message.content or "")
            return 0
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments or "{}")
            result = TOOL_IMPLS[call.function.name](**args)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    print("I could not finish within the step limit.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
