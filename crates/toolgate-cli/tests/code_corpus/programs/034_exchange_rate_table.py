# What are today's rates from EUR to USD, GBP, PLN and SEK?
import asyncio

quotes = ["USD", "GBP", "PLN", "SEK"]
rates = await asyncio.gather(*[get_exchange_rate("EUR", q) for q in quotes])
table = {r["quote"]: r["rate"] for r in rates}
print(table)
print("as of", rates[0]["date"])
