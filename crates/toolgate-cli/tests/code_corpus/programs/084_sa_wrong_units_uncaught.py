# Task: "What's the temperature in Milan in Celsius?"
weather = get_weather(city="Milan", units="celsius")
print(weather["current"])
temperature = weather["current"]["temperature"]
final_answer(f"It is {temperature}°C in Milan")
