# Get the full CRM records of every gold customer and show their contact and open tickets.
import asyncio

hits = await crm.search_customers("bakery", "gold")
gold = [c["id"] for c in hits["customers"] if c["tier"] == "gold"]
records = await asyncio.gather(*(crm.get_customer(cid) for cid in gold))
for r in records:
    print(r["id"], r["email"], r["open_tickets"])
