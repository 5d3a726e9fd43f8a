# Break down the open tickets by type and by priority.
from collections import Counter

tickets = list_tickets(status="open", type="any")["tickets"]
open_tickets = [t for t in tickets if t["status"] == "open"]
by_type = Counter(t["type"] for t in open_tickets)
by_priority = Counter(t["priority"] for t in open_tickets)
{
    "total": len(open_tickets),
    "by_type": dict(by_type.most_common()),
    "by_priority": dict(sorted(by_priority.items())),
}
