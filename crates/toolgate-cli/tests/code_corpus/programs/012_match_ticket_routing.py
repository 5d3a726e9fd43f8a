# Suggest who should take each unassigned open ticket.
def route(ticket):
    match ticket:
        case {"type": "billing"}:
            return "finance"
        case {"type": "bug", "priority": "urgent" | "high"}:
            return "engineering on call"
        case {"type": "bug"}:
            return "engineering backlog"
        case {"type": "feature" | "question"}:
            return "product"
        case _:
            return "support"


tickets = list_tickets()["tickets"]
{t["id"]: route(t) for t in tickets if t["assignee"] is None and t["status"] == "open"}
