# Average product rating per category, and which category has the most consistent ratings?
import asyncio
import statistics
from collections import defaultdict


async def main():
    products = (await list_products())["products"]
    by_cat = defaultdict(list)
    for p in products:
        by_cat[p["category"]].append(p["rating"])
    stats = {
        cat: {"mean": round(statistics.mean(r), 2), "spread": round(statistics.pstdev(r), 3)}
        for cat, r in sorted(by_cat.items())
    }
    steadiest = min(stats, key=lambda c: stats[c]["spread"])
    return {"categories": stats, "steadiest": steadiest}


result = asyncio.run(main())
result
