# Task: "Is it warmer in Paris or in Warsaw today?"
paris = get_weather("Paris")
print("Paris:", paris["current"])
warsaw = get_weather("Warsaw")
print("Warsaw:", warsaw["current"])
diff = paris["current"]["temperature"] - warsaw["current"]["temperature"]
if diff > 0:
    final_answer("Paris is warmer")
elif diff < 0:
    final_answer("Warsaw is warmer")
else:
    final_answer("Both cities have the same temperature: %.1f°C" % paris["current"]["temperature"])
