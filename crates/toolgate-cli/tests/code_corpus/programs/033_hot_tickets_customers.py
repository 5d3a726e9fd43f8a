# Which customers have urgent or high-priority open tickets? Show their tier too.
import asyncio

tickets = (await list_tickets("open"))["tickets"]
hot = [t for t in tickets if t["priority"] in ("urgent", "high") and t["status"] == "open"]
ids = sorted({t["customer_id"] for t in hot})
customers = await asyncio.gather(*[crm.get_customer(i) for i in ids])
by_id = {c["id"]: c for c in customers}
for t in hot:
    c = by_id[t["customer_id"]]
    print(f"{t['id']} [{t['priority']}] {c['id']} {c['tier']}: {t['subject']}")
