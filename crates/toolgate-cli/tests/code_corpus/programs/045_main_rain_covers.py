# Should the drivers in Hamburg and Warsaw take rain covers tomorrow?
import asyncio


async def main():
    cities = ["Hamburg", "Warsaw"]
    reports = await asyncio.gather(*(get_weather(city=c, days=2) for c in cities))
    advice = {}
    for city, r in zip(cities, reports):
        tomorrow = r["forecast"][1]
        advice[city] = "rain covers" if tomorrow["precipitation_mm"] > 1 else "no covers"
    return advice


result = asyncio.run(main())
result
