# Task: "Which products should we reorder this week?"
products = list_products()["products"]
for p in products:
    print("{sku}: stock {stock}, reorder at {reorder_level}".format(**p))
to_reorder = [p["sku"] for p in products if p["stock"] <= p["reorder_level"]]
final_answer(to_reorder)
