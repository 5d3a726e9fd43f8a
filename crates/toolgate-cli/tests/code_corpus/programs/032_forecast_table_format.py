# Print a 3-day forecast table for Paris in Fahrenheit.
forecast = await get_weather("Paris", "imperial", 3)
print("{:<12}{:>6}{:>6}{:>8}".format("date", "high", "low", "rain"))
for day in forecast["forecast"]:
    print("{date:<12}{high:>6.1f}{low:>6.1f}{precipitation_mm:>8.1f}".format(**day))
