# Build a compact JSON status report: Hamburg weather, open ticket count, products to reorder.
import asyncio, json

weather, tickets, products = await asyncio.gather(
    get_weather("Hamburg"), list_tickets(), list_products("all", "low_stock")
)
report = {
    "weather": weather["current"]["condition"],
    "open_tickets": sum(t["status"] == "open" for t in tickets["tickets"]),
    "reorder": sorted(p["sku"] for p in products["products"] if p["stock"] <= p["reorder_level"]),
}
print(json.dumps(report, sort_keys=True))
