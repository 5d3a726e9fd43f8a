# How much warmer is it in Milan than in Warsaw right now?
milan = await get_weather("Milan")
warsaw = get_weather("Warsaw")
diff = milan["current"]["temperature"] - warsaw["current"]["temperature"]
print(f"Milan is {diff:+.1f}°C compared to Warsaw")
