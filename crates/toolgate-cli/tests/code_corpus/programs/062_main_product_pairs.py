# Which pairs of equipment products cost less than 100 EUR together?
import asyncio
from itertools import combinations


async def main():
    products = (await list_products(category="equipment"))["products"]
    equipment = [p for p in products if p["category"] == "equipment"]
    pairs = [
        (a["name"], b["name"], round(a["price"] + b["price"], 2))
        for a, b in combinations(equipment, 2)
        if a["price"] + b["price"] < 100
    ]
    return sorted(pairs, key=lambda p: p[2])


result = asyncio.run(main())
result
