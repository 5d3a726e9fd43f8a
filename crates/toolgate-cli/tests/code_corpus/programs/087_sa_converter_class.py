# Task: "Convert the unit prices of ORD-20877 into USD and PLN."
class Converter:
    def __init__(self):
        self.cache = {}

    def rate(self, base, quote):
        if (base, quote) not in self.cache:
            self.cache[(base, quote)] = get_exchange_rate(base=base, quote=quote)["rate"]
        return self.cache[(base, quote)]

    @staticmethod
    def fmt(amount, currency):
        return f"{amount:,.2f} {currency}"


order = get_order(order_id="ORD-20877")
fx = Converter()
rows = {}
for item in order["items"]:
    rows[item["sku"]] = [Converter.fmt(item["unit_price"] * fx.rate(order["currency"], q), q) for q in ("USD", "PLN")]
    print(item["name"], rows[item["sku"]])
print("rates fetched:", len(fx.cache))
final_answer(rows)
