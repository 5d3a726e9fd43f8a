# Give me a structured overview of CUS-1150: record, orders by status and open tickets.
import asyncio
from collections import Counter
from pprint import pprint


async def main():
    customer, orders, tickets = await asyncio.gather(
        crm.get_customer(id="CUS-1150"),
        list_orders(customer_id="CUS-1150"),
        list_tickets(customer_id="CUS-1150"),
    )
    overview = {
        "customer": {k: customer[k] for k in ("id", "tier", "country")},
        "orders": dict(Counter(o["status"] for o in orders["orders"])),
        "tickets": [t["id"] for t in tickets["tickets"] if t["customer_id"] == "CUS-1150"],
    }
    pprint(overview)
    return overview


result = asyncio.run(main())
result
