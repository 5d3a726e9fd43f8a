# What is the stock of ingredients and of equipment worth?
import asyncio


async def category_value(category):
    data = await list_products(category)
    await asyncio.sleep(0)
    return category, sum(p["price"] * p["stock"] for p in data["products"] if p["category"] == category)


results = await asyncio.gather(category_value("ingredients"), category_value("equipment"))
for category, value in results:
    print(f"{category:<12} {value:>10,.2f} EUR")
dict(results)
