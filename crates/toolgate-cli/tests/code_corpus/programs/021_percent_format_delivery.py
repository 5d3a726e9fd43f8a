# Is it dry enough in Hamburg over the next days to deliver by cargo bike?
w = get_weather(city="Hamburg", days=3)
lines = []
for day in w["forecast"]:
    ok = day["precipitation_mm"] < 1.0 and w["current"]["wind_kph"] < 25
    lines.append("%s: %-8s %4.1f mm  %s" % (day["date"], day["condition"], day["precipitation_mm"], "bike" if ok else "van"))
print("\n".join(lines))
sum(1 for l in lines if l.endswith("bike"))
