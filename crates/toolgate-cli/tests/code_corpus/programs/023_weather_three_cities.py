# Compare the weather in Hamburg, Paris and Milan right now.
import asyncio

cities = ["Hamburg", "Paris", "Milan"]
reports = await asyncio.gather(*[get_weather(city) for city in cities])
for city, report in zip(cities, reports):
    now = report["current"]
    print(f"{city}: {now['temperature']}°C, {now['condition']}, wind {now['wind_kph']} km/h")
