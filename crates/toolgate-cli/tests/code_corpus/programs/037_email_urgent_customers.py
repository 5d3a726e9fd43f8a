# Email the customers with urgent tickets that we are on it.
import asyncio

tickets = (await list_tickets("open"))["tickets"]
urgent = [t for t in tickets if t["priority"] == "urgent"]
customers = await asyncio.gather(*[crm.get_customer(t["customer_id"]) for t in urgent])
sent = await asyncio.gather(*[
    send_email(c["email"], f"About your ticket {t['id']}", f"Hello {c['name']}, we are working on '{t['subject']}' right now.")
    for c, t in zip(customers, urgent)
])
print([s["status"] for s in sent])
