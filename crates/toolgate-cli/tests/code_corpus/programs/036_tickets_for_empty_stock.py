# Open an internal ticket (our own account is CUS-1000) for every product that is out of stock.
import asyncio

products = (await list_products("all", "out_of_stock"))["products"]
empty = [p for p in products if p["stock"] == 0]
created = await asyncio.gather(*[
    create_ticket(
        "CUS-1000",
        f"Out of stock: {p['name']}",
        "question",
        f"{p['sku']} from {p['supplier']} is at 0 units.",
        "high",
    )
    for p in empty
])
for t in created:
    print(t["ticket_id"], t["subject"], t["priority"])
