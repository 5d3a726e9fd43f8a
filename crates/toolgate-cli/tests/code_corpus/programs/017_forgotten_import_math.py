# What's the average rating of our equipment products, rounded up to one decimal?
products = list_products(category="equipment")["products"]
ratings = [p["rating"] for p in products if p["category"] == "equipment"]
avg = sum(ratings) / len(ratings)
math.ceil(avg * 10) / 10
