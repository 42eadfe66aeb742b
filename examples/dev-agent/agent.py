#!/usr/bin/env python3
"""dev-agent: answers questions about a codebase with a JSON report.

A deterministic code-analysis agent on the official `openai` SDK (Chat
Completions with tools, temperature 0, JSON output): the model explores the
sample project under examples/dev-agent/sample/ with `list_files`, `read_file`
and `count_lines`, and answers with one JSON object. The agent prints

    {"query": "...", "result": {...the model's JSON...}, "files_inspected": [...]}

so a spec can check the report's shape (json_schema), its content (regex_match)
and the exact tool path (match_mode: strict). The tools only read files inside
the project (DEV_AGENT_ROOT, default: the sample), so their results are the same
on every machine. agentci starts it once per case with the question in
AGENTCI_QUERY.
"""

import json
import os
import sys
from pathlib import Path

from openai import OpenAI

MODEL = os.environ.get("DEV_AGENT_MODEL", "gpt-4o-mini")
ROOT = Path(os.environ.get("DEV_AGENT_ROOT", Path(__file__).parent / "sample")).resolve()
MAX_STEPS = 8

INSTRUCTIONS = (
    "You are a code-analysis agent. Inspect the project only through your tools; "
    "never guess file contents. Reply with a single JSON object and nothing else. "
    "Paths are relative to the project root. [dev-agent v1]"
)


def resolve(path: str) -> Path:
    """A path inside the project, or ValueError: the tools never read outside it."""
    target = (ROOT / path).resolve()
    if target != ROOT and ROOT not in target.parents:
        raise ValueError(f"{path} is outside the project")
    return target


def list_files(path: str = ".") -> dict:
    base = resolve(path)
    if not base.is_dir():
        return {"error": f"{path} is not a directory"}
    files = sorted(str(p.relative_to(ROOT)) for p in base.rglob("*") if p.is_file())
    return {"path": path, "files": files}


def read_file(path: str) -> dict:
    target = resolve(path)
    if not target.is_file():
        return {"error": f"{path} does not exist"}
    return {"path": path, "content": target.read_text()}


def count_lines(path: str) -> dict:
    target = resolve(path)
    if not target.is_file():
        return {"error": f"{path} does not exist"}
    return {"path": path, "lines": len(target.read_text().splitlines())}


def tool(name: str, description: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }


TOOLS = [
    tool("list_files", "List the files under a directory of the project, recursively."),
    tool("read_file", "Read a file of the project."),
    tool("count_lines", "Count the lines of a file of the project."),
]
TOOL_IMPLS = {"list_files": list_files, "read_file": read_file, "count_lines": count_lines}


def call_tool(name: str, arguments: str) -> dict:
    try:
        return TOOL_IMPLS[name](**json.loads(arguments or "{}"))
    except KeyError:
        return {"error": f"unknown tool {name}"}
    except (ValueError, TypeError) as why:  # bad arguments, or a path outside the project
        return {"error": str(why)}


def main() -> int:
    query = os.environ.get("AGENTCI_QUERY") or " ".join(sys.argv[1:])
    if not query:
        print("usage: AGENTCI_QUERY='question' agent.py", file=sys.stderr)
        return 2
    client = OpenAI()
    messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": query}]
    inspected = set()
    for _ in range(MAX_STEPS):
        response = client.chat.completions.create(
            model=MODEL,
            messages=messages,
            tools=TOOLS,
            temperature=0,
            seed=7,
            response_format={"type": "json_object"},
        )
        message = response.choices[0].message
        if not message.tool_calls:
            try:
                result = json.loads(message.content or "")
            except json.JSONDecodeError:
                result = {"error": "the model did not answer with JSON", "raw": message.content}
            report = {"query": query, "result": result, "files_inspected": sorted(inspected)}
            print(json.dumps(report, indent=2))
            return 0
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = call_tool(call.function.name, call.function.arguments)
            if call.function.name != "list_files" and "error" not in result:
                inspected.add(result["path"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    print(json.dumps({"query": query, "error": f"no answer within {MAX_STEPS} steps"}, indent=2))
    return 1


if __name__ == "__main__":
    sys.exit(main())
