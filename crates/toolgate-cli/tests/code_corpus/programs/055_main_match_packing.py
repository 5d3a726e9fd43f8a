# Decide how to pack today's deliveries for Hamburg, Paris and Warsaw, based on the weather.
import asyncio


def packing(current):
    match current:
        case {"temperature": t} if t >= 25:
            return "cool boxes"
        case {"condition": c} if "rain" in c or "shower" in c:
            return "waterproof crates"
        case {"wind_kph": w} if w > 40:
            return "strapped pallets"
        case _:
            return "standard crates"


async def main():
    cities = ("Hamburg", "Paris", "Warsaw")
    reports = await asyncio.gather(*(get_weather(city=c, days=1) for c in cities))
    return {r["city"]: packing(r["current"]) for r in reports}


result = asyncio.run(main())
result
