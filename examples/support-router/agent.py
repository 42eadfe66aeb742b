#!/usr/bin/env python3
"""support-router: a customer-support triage agent that hands off to specialists.

Built on the official `openai` SDK (Chat Completions with tools) in the style of
the OpenAI Agents SDK: each agent has its own instructions and tools, and a
handoff is a tool named `transfer_to_<agent>`. When the model calls one, the
program switches to that agent (its system prompt, model and tools) and keeps the
conversation, the way `agents.Runner` does; the specialist then answers.

    TriageAgent ──transfer_to_billing_agent──▶ BillingAgent    (invoices, refunds, plans)
                └─transfer_to_technical_agent─▶ TechnicalAgent  (outages, errors, logins)

agentci starts it once per case with the customer's message in AGENTCI_QUERY;
the answer is what it prints. The back-office data below is a fixed fake, so
tool results are deterministic.
"""

import json
import os
import sys

from openai import OpenAI

MAX_TURNS = 10

# ── The fake back office the tools read and write ────────────────────────────

INVOICES = {
    "INV-1042": {"amount": 49.00, "status": "paid", "month": "October", "charges": 2},
    "INV-0931": {"amount": 29.00, "status": "paid", "month": "March", "charges": 1},
    "INV-1077": {"amount": 99.00, "status": "paid", "month": "November", "charges": 1},
}
SERVICES = {
    "api": {"status": "degraded", "note": "elevated 503 rates in eu-west since 09:40 UTC"},
    "dashboard": {"status": "operational"},
    "checkout": {"status": "operational", "note": "an outage 02:10-02:35 UTC is resolved"},
    "sync": {"status": "operational"},
}
ERROR_CODES = {
    "E1203": "Sync conflict: the file changed on two devices; keep one copy and retry.",
    "E2001": "Invalid API key: create a new key under Settings > API.",
}
ACCOUNTS = {"sam@example.com", "jo@example.com", "acme@example.com", "lee@example.com"}
PLANS = {"free", "starter", "pro"}


def lookup_invoice(invoice_id: str) -> dict:
    invoice = INVOICES.get(invoice_id.upper())
    if invoice is None:
        return {"error": f"no invoice {invoice_id}"}
    return {"invoice_id": invoice_id.upper(), **invoice}


def issue_refund(invoice_id: str, amount: float, reason: str = "") -> dict:
    invoice = INVOICES.get(invoice_id.upper())
    if invoice is None:
        return {"error": f"no invoice {invoice_id}"}
    if amount <= 0 or amount > invoice["amount"]:
        return {"error": f"refund must be between 0 and {invoice['amount']:.2f}"}
    return {"refund_id": f"RF-{invoice_id.upper()[4:]}", "amount": amount, "status": "issued"}


def change_plan(email: str, plan: str) -> dict:
    if email not in ACCOUNTS:
        return {"error": f"no account {email}"}
    if plan not in PLANS:
        return {"error": f"unknown plan {plan}; plans: {sorted(PLANS)}"}
    return {"email": email, "plan": plan, "effective": "next billing cycle"}


def check_service_status(service: str) -> dict:
    status = SERVICES.get(service.lower())
    return {"service": service, **status} if status else {"error": f"unknown service {service}"}


def lookup_error_code(code: str) -> dict:
    meaning = ERROR_CODES.get(code.upper())
    return {"code": code.upper(), "meaning": meaning} if meaning else {"error": f"unknown code {code}"}


def reset_password(email: str) -> dict:
    if email not in ACCOUNTS:
        return {"error": f"no account {email}"}
    return {"email": email, "reset_link_sent": True, "unlocked": True}


def function(name: str, description: str, **properties: str) -> dict:
    """A Chat Completions tool definition whose parameters are all required strings or numbers."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }


# ── The agents ────────────────────────────────────────────────────────────────

TRANSFER_TO_BILLING = function(
    "transfer_to_billing_agent", "Hand the conversation to BillingAgent (invoices, refunds, plans)."
)
TRANSFER_TO_TECHNICAL = function(
    "transfer_to_technical_agent",
    "Hand the conversation to TechnicalAgent (outages, error codes, passwords, locked accounts).",
)

AGENTS = {
    "TriageAgent": {
        "model": "gpt-4o-mini",
        "instructions": "You are the triage agent of Acme support. Route billing questions "
        "(invoices, charges, refunds, plans, cancellations) to BillingAgent and technical "
        "ones (outages, error codes, passwords, locked accounts) to TechnicalAgent. Politely "
        "decline anything unrelated to Acme, without a handoff. [agent: triage]",
        "tools": [TRANSFER_TO_BILLING, TRANSFER_TO_TECHNICAL],
    },
    "BillingAgent": {
        "model": "gpt-4o",
        "instructions": "You are the billing agent of Acme support. Look invoices up before "
        "acting; refund only amounts an invoice shows were charged in error. Never refund "
        "without an invoice. Hand technical problems to TechnicalAgent. [agent: billing]",
        "tools": [
            function("lookup_invoice", "Fetch an invoice.", invoice_id="string"),
            function(
                "issue_refund",
                "Refund part or all of an invoice.",
                invoice_id="string",
                amount="number",
                reason="string",
            ),
            function("change_plan", "Move an account to another plan.", email="string", plan="string"),
            TRANSFER_TO_TECHNICAL,
        ],
    },
    "TechnicalAgent": {
        "model": "gpt-4o",
        "instructions": "You are the technical agent of Acme support. Check the service "
        "status or the error code before answering; reset passwords only for the account "
        "owner's email. Hand billing questions to BillingAgent. [agent: technical]",
        "tools": [
            function("check_service_status", "Current status of an Acme service.", service="string"),
            function("lookup_error_code", "Explain an Acme error code.", code="string"),
            function("reset_password", "Send a reset link and unlock the account.", email="string"),
            TRANSFER_TO_BILLING,
        ],
    },
}

TOOL_IMPLS = {
    "lookup_invoice": lookup_invoice,
    "issue_refund": issue_refund,
    "change_plan": change_plan,
    "check_service_status": check_service_status,
    "lookup_error_code": lookup_error_code,
    "reset_password": reset_password,
}

# Handoff tool name → agent, derived from the one convention: transfer_to_<snake_case name>.
HANDOFFS = {"transfer_to_billing_agent": "BillingAgent", "transfer_to_technical_agent": "TechnicalAgent"}


def run(client: OpenAI, query: str) -> str:
    agent_name = "TriageAgent"
    # The conversation without the system prompt: a handoff keeps the history and
    # swaps the instructions, as the Agents SDK does.
    history = [{"role": "user", "content": query}]
    for _ in range(MAX_TURNS):
        agent = AGENTS[agent_name]
        response = client.chat.completions.create(
            model=agent["model"],
            messages=[{"role": "system", "content": agent["instructions"]}, *history],
            tools=agent["tools"],
            temperature=0,
        )
        message = response.choices[0].message
        if not message.tool_calls:
            return f"[{agent_name}] {message.content or ''}"
        history.append(message.model_dump(exclude_none=True))
        next_agent = agent_name
        for call in message.tool_calls:
            name = call.function.name
            if name in HANDOFFS:
                next_agent = HANDOFFS[name]
                result = {"assistant": next_agent}
            elif name in TOOL_IMPLS:
                result = TOOL_IMPLS[name](**json.loads(call.function.arguments or "{}"))
            else:
                result = {"error": f"unknown tool {name}"}
            history.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        agent_name = next_agent
    return f"[{agent_name}] Sorry, I could not resolve this within {MAX_TURNS} turns."


def main() -> int:
    query = os.environ.get("AGENTCI_QUERY") or " ".join(sys.argv[1:])
    if not query:
        print("usage: AGENTCI_QUERY='message' agent.py", file=sys.stderr)
        return 2
    print(run(OpenAI(), query))
    return 0


if __name__ == "__main__":
    sys.exit(main())
