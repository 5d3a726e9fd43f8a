# Task: "Prepare the JSON body for the partner API with our in-stock ingredients."
import json

products = list_products(category="ingredients", filter="in_stock")["products"]
payload = {
    "partner": "keller-supply",
    "items": [
        {"sku": p["sku"], "qty": p["stock"]}
        for p in products
        if p["category"] == "ingredients" and p["stock"] > 0
    ],
}
text = json.dumps(payload, indent=2)
print(text)
final_answer(json.loads(text))
