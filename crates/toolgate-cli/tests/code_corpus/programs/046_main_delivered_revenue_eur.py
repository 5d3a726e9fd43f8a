# Total CUS-1042's delivered revenue in EUR, converting the USD orders.
import asyncio


async def main():
    orders_resp, fx = await asyncio.gather(
        list_orders(customer_id="CUS-1042", status="delivered"),
        get_exchange_rate(base="USD", quote="EUR"),
    )
    total = 0.0
    for o in orders_resp["orders"]:
        if o["status"] != "delivered":
            continue
        total += o["total"] * (fx["rate"] if o["currency"] == "USD" else 1)
    return round(total, 2)


result = asyncio.run(main())
print(f"Delivered revenue: {result:.2f} EUR")
result
