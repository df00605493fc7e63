"""Name pools for the `table/*` generator (`data.py`): people, stores, cities, products, towns.

    from posttrain.domains.table.pools import CITIES, person_names
    names = person_names(rng, 12)   # 12 distinct "First Last" names

Each pool holds at least 40 entries (the largest table has 40 rows). City rows carry a
rough annual mean temperature, a seasonal half-range (both °C) and the hemisphere;
product rows a typical price in dollars.

Not guaranteed: the climate and price figures are rounded guides for plausible synthetic
values, not reference data. No name holds a comma, quote or pipe (the renderers and the
comma-separated list answers rely on that).
"""

from __future__ import annotations

import random

# fmt: off
FIRST_NAMES = (
    "Ada", "Alan", "Amir", "Ana", "Ben", "Carla", "Chen", "Dana", "Diego", "Eli", "Emma", "Farah",
    "Grace", "Hana", "Ivan", "Jonas", "Kai", "Lena", "Liam", "Maya", "Mei", "Nina", "Omar", "Paula",
    "Priya", "Raj", "Rosa", "Sam", "Sofia", "Tara", "Theo", "Yusuf", "Zoe",
)
LAST_NAMES = (
    "Abbott", "Baker", "Costa", "Diaz", "Evans", "Fischer", "Garcia", "Hughes", "Ito", "Jensen",
    "Khan", "Larsen", "Lopez", "Moreau", "Nakamura", "Novak", "Okafor", "Patel", "Quinn", "Reyes",
    "Rossi", "Sato", "Schmidt", "Silva", "Tanaka", "Varga", "Weber", "Wong", "Young", "Zhang",
)
# (store, region)
STORES = (
    ("Minneapolis", "North"), ("Milwaukee", "North"), ("Detroit", "North"), ("Madison", "North"), ("Duluth", "North"),
    ("Fargo", "North"), ("Green Bay", "North"), ("Grand Rapids", "North"), ("Houston", "South"), ("Atlanta", "South"),
    ("Miami", "South"), ("Dallas", "South"), ("Nashville", "South"), ("Memphis", "South"), ("New Orleans", "South"),
    ("Tampa", "South"), ("Charlotte", "South"), ("Austin", "South"), ("Boston", "East"), ("Philadelphia", "East"),
    ("Baltimore", "East"), ("Pittsburgh", "East"), ("Hartford", "East"), ("Newark", "East"), ("Providence", "East"),
    ("Buffalo", "East"), ("Albany", "East"), ("Richmond", "East"), ("Seattle", "West"), ("Portland", "West"),
    ("San Diego", "West"), ("Sacramento", "West"), ("Phoenix", "West"), ("Las Vegas", "West"), ("Reno", "West"),
    ("Fresno", "West"), ("Tucson", "West"), ("Boise", "West"), ("Chicago", "Central"), ("Saint Louis", "Central"),
    ("Kansas City", "Central"), ("Omaha", "Central"), ("Indianapolis", "Central"), ("Columbus", "Central"), ("Cincinnati", "Central"),
    ("Louisville", "Central"), ("Tulsa", "Central"), ("Wichita", "Central"),
)
# (city, continent, annual mean °C, seasonal half-range °C, hemisphere)
CITIES = (
    ("Oslo", "Europe", 6.0, 11.0, "N"), ("Stockholm", "Europe", 7.0, 10.0, "N"), ("Helsinki", "Europe", 6.0, 12.0, "N"),
    ("Copenhagen", "Europe", 9.0, 8.0, "N"), ("Dublin", "Europe", 10.0, 5.0, "N"), ("London", "Europe", 11.0, 7.0, "N"),
    ("Paris", "Europe", 12.0, 8.0, "N"), ("Berlin", "Europe", 10.0, 10.0, "N"), ("Warsaw", "Europe", 9.0, 11.0, "N"),
    ("Vienna", "Europe", 11.0, 10.0, "N"), ("Prague", "Europe", 9.0, 10.0, "N"), ("Madrid", "Europe", 15.0, 10.0, "N"),
    ("Lisbon", "Europe", 17.0, 6.0, "N"), ("Rome", "Europe", 16.0, 9.0, "N"), ("Athens", "Europe", 19.0, 9.0, "N"),
    ("Reykjavik", "Europe", 5.0, 6.0, "N"), ("Tokyo", "Asia", 16.0, 11.0, "N"), ("Seoul", "Asia", 13.0, 14.0, "N"),
    ("Beijing", "Asia", 13.0, 16.0, "N"), ("Shanghai", "Asia", 17.0, 12.0, "N"), ("Hong Kong", "Asia", 23.0, 6.0, "N"),
    ("Singapore", "Asia", 27.5, 1.0, "N"), ("Bangkok", "Asia", 29.0, 2.0, "N"), ("Mumbai", "Asia", 27.0, 3.0, "N"),
    ("Delhi", "Asia", 25.0, 10.0, "N"), ("Dubai", "Asia", 28.0, 8.0, "N"), ("Manila", "Asia", 28.0, 2.0, "N"),
    ("Hanoi", "Asia", 24.0, 6.0, "N"), ("Tehran", "Asia", 18.0, 13.0, "N"), ("Almaty", "Asia", 10.0, 15.0, "N"),
    ("Cairo", "Africa", 22.0, 7.0, "N"), ("Lagos", "Africa", 27.0, 1.5, "N"), ("Nairobi", "Africa", 19.0, 1.5, "S"),
    ("Casablanca", "Africa", 18.0, 5.0, "N"), ("Accra", "Africa", 27.0, 1.5, "N"), ("Addis Ababa", "Africa", 16.0, 1.5, "N"),
    ("Johannesburg", "Africa", 16.0, 5.0, "S"), ("Cape Town", "Africa", 17.0, 4.5, "S"), ("Dakar", "Africa", 25.0, 3.0, "N"),
    ("Tunis", "Africa", 19.0, 8.0, "N"), ("New York", "Americas", 13.0, 12.0, "N"), ("Chicago", "Americas", 10.0, 14.0, "N"),
    ("Toronto", "Americas", 9.0, 14.0, "N"), ("Mexico City", "Americas", 17.0, 3.0, "N"), ("Lima", "Americas", 19.0, 3.0, "S"),
    ("Bogota", "Americas", 14.0, 0.5, "N"), ("Buenos Aires", "Americas", 18.0, 6.0, "S"), ("Santiago", "Americas", 15.0, 6.0, "S"),
    ("Sao Paulo", "Americas", 20.0, 3.5, "S"), ("Vancouver", "Americas", 11.0, 7.0, "N"), ("Havana", "Americas", 26.0, 3.0, "N"),
    ("Montreal", "Americas", 7.0, 16.0, "N"), ("Sydney", "Oceania", 18.0, 5.0, "S"), ("Melbourne", "Oceania", 15.0, 5.0, "S"),
    ("Brisbane", "Oceania", 21.0, 4.5, "S"), ("Perth", "Oceania", 19.0, 6.0, "S"), ("Auckland", "Oceania", 16.0, 4.5, "S"),
    ("Wellington", "Oceania", 13.0, 4.0, "S"), ("Adelaide", "Oceania", 17.0, 6.0, "S"), ("Hobart", "Oceania", 13.0, 4.5, "S"),
    ("Darwin", "Oceania", 28.0, 2.0, "S"), ("Suva", "Oceania", 25.0, 1.5, "S"), ("Canberra", "Oceania", 13.0, 8.0, "S"),
)
# (product, category, typical price in dollars)
PRODUCTS = (
    ("Stapler", "Office", 12), ("Desk lamp", "Office", 35), ("Printer paper", "Office", 9), ("Filing cabinet", "Office", 140),
    ("Ergonomic chair", "Office", 260), ("Whiteboard", "Office", 75), ("Label maker", "Office", 40), ("Paper shredder", "Office", 90),
    ("Monitor stand", "Office", 45), ("Ink cartridge", "Office", 30), ("Chef knife", "Kitchen", 60), ("Blender", "Kitchen", 85),
    ("Cutting board", "Kitchen", 25), ("Cast iron pan", "Kitchen", 45), ("Kettle", "Kitchen", 35), ("Toaster", "Kitchen", 40),
    ("Spice rack", "Kitchen", 30), ("Coffee grinder", "Kitchen", 55), ("Mixing bowls", "Kitchen", 28), ("Rice cooker", "Kitchen", 70),
    ("Garden hose", "Garden", 32), ("Pruning shears", "Garden", 22), ("Wheelbarrow", "Garden", 120), ("Seed tray", "Garden", 8),
    ("Lawn mower", "Garden", 320), ("Rake", "Garden", 18), ("Watering can", "Garden", 15), ("Bird feeder", "Garden", 26),
    ("Compost bin", "Garden", 65), ("Garden gloves", "Garden", 12), ("Headphones", "Electronics", 150), ("Webcam", "Electronics", 70),
    ("Power bank", "Electronics", 40), ("Smart plug", "Electronics", 20), ("Keyboard", "Electronics", 60), ("Router", "Electronics", 110),
    ("Tablet", "Electronics", 380), ("Speaker", "Electronics", 95), ("Charging cable", "Electronics", 12), ("Yoga mat", "Sports", 30),
    ("Dumbbells", "Sports", 55), ("Tennis racket", "Sports", 120), ("Football", "Sports", 25), ("Bike helmet", "Sports", 60),
    ("Jump rope", "Sports", 10), ("Water bottle", "Sports", 18), ("Running shoes", "Sports", 110), ("Climbing rope", "Sports", 180),
    ("Swim goggles", "Sports", 16),
)
TOWNS = (
    "Ashford", "Bramley", "Carlton", "Dunmore", "Eastwick", "Fairhaven", "Glenfield", "Harrow", "Ironbridge", "Kingsley",
    "Lakeside", "Marston", "Newbury", "Oakham", "Penrith", "Queensbury", "Redcliffe", "Stanton", "Thornbury", "Upton",
    "Valemont", "Westbury", "Yarmouth", "Ambleside", "Belford", "Coldstream", "Dorchester", "Elmstead", "Foxton", "Greystone",
    "Hartley", "Kirkwall", "Langford", "Millbrook", "Northam", "Ormskirk", "Portland", "Rochford", "Selby", "Tamworth",
    "Ulverston", "Wakefield", "Alderton", "Broughton", "Chesterfield", "Denholm",
)
# fmt: on
CLUB_SUFFIXES = ("United", "City", "Rovers", "Athletic", "Town", "Wanderers", "Albion")


def person_names(rng: random.Random, count: int) -> list[str]:
    """`count` distinct "First Last" names."""
    picks = rng.sample(range(len(FIRST_NAMES) * len(LAST_NAMES)), count)
    return [f"{FIRST_NAMES[i // len(LAST_NAMES)]} {LAST_NAMES[i % len(LAST_NAMES)]}" for i in picks]
