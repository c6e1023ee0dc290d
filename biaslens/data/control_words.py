"""The word lists behind control pairs (`biaslens.analyses.controls`): non-social words by part of speech, and the
part of speech of the social-group words benchmarks swap. Written by hand for biaslens (English only); plain data.

Parts of speech (a small tag set of their own, enough to keep a swapped sentence grammatical):
NOUN (singular common noun), NOUNS (plural), ADJ, PROPN (proper noun), PRON (personal pronoun, subject or object),
POSS (possessive determiner), REFL (reflexive pronoun), VERB / VERBS / VERBED / VERBING (base, third person singular,
past, -ing form), ADV.

`CONTROL_WORDS`: words without social meaning, chosen to name things, materials, weather, calendar days and months,
planets and stars, and household actions: no person, occupation, nationality, place, religion, body, colour (black,
white, brown and yellow name races), age, sentiment or judgement. Each list spans common to rare words, so that a
group word of any frequency finds control words near its own (wordfreq's Zipf scale, about 2 to 7).

`GROUP_POS`: the part of speech of social-group words as benchmark pairs use them (lower case): the words modified
most often in CrowS-Pairs and common group words beyond them (nationality words such as "Mexican" as adjectives,
their plurals as plural nouns). A word not listed gets a part of speech from its form
(`biaslens.analyses.controls.guess_pos`).
"""

from __future__ import annotations

POS_TAGS = ("NOUN", "NOUNS", "ADJ", "PROPN", "PRON", "POSS", "REFL", "VERB", "VERBS", "VERBED", "VERBING", "ADV")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


CONTROL_WORDS: dict[str, tuple[str, ...]] = {
    "NOUN": _words(
        """time day way thing water house car door book room tree table window road river street hour week music money
        food light paper wall floor box bottle chair glass field garden stone ball cup bag bed boat bridge clock coat desk
        egg engine fence flower forest gate hill island kitchen lake lamp leaf map mountain oven pencil pillow plate pocket
        rock roof rope salt sand shelf ship shoe soap spoon star stove sugar tent ticket tile towel tower train truck tunnel
        umbrella valley wheel wire wood yard apple banana basket bell blanket bucket button candle carpet castle ceiling
        cloud coin drawer feather kettle ladder lantern lemon mirror needle pebble pepper piano puddle quilt saucer shovel
        sponge stool teapot thimble trowel tulip walnut whistle zipper acorn anvil biscuit cobweb doorknob eggplant faucet
        gravel hammock jar kite ledge marble napkin nutmeg oar paddle parsnip pinecone raft rake sawdust shingle sleeve
        spatula spindle thermos tinfoil trellis turnip twig wardrobe windmill wrench yarn"""
    ),
    "NOUNS": _words(
        """things days hours weeks books doors trees tables windows roads rivers streets rooms cars houses walls boxes
        bottles chairs glasses fields gardens stones balls cups bags beds boats bridges clocks coats desks eggs engines
        fences flowers forests gates hills islands lamps leaves maps mountains pencils pillows plates pockets rocks roofs
        ropes shelves ships shoes spoons stars tents tickets tiles towels towers trains trucks tunnels umbrellas valleys
        wheels wires apples bananas baskets bells blankets buckets buttons candles carpets castles clouds coins drawers
        feathers kettles ladders lanterns lemons mirrors needles pebbles pillars puddles quilts saucers shovels sponges
        stools teapots thimbles trowels tulips walnuts whistles zippers acorns anvils biscuits cobwebs doorknobs faucets
        hammocks jars kites ledges marbles napkins oars paddles parsnips pinecones rafts rakes shingles sleeves spatulas
        turnips twigs wardrobes windmills wrenches"""
    ),
    "ADJ": _words(
        """new same other long high full open hot cold dry wet fresh empty round square flat wide deep narrow wooden
        plastic metal electric digital liquid solid frozen rainy sunny cloudy windy sandy rocky dusty rusty shiny sticky
        smooth rough hollow woolen silver daily weekly monthly annual hourly inner outer vertical
        horizontal circular rectangular triangular cubic oval spiral striped dotted plaid laminated galvanized waterproof
        fireproof foldable portable adjustable rechargeable disposable reusable"""
    ),
    "PROPN": _words(
        """January February April June July August September October November December Monday Tuesday Wednesday
        Thursday Friday Saturday Sunday Jupiter Saturn Mars Venus Mercury Neptune Uranus Pluto Orion Sirius Polaris
        Andromeda Vega Rigel Betelgeuse Cassiopeia"""
    ),
    "PRON": _words("it this that something nothing everything anything one"),
    "POSS": _words("its the this that each every some any one"),
    "REFL": _words("itself"),
    "VERB": _words("fold paint stack boil scrub melt drip rotate sort print wrap pour bake stir slice peel sweep mop dust rinse"),
    "VERBS": _words(
        "folds paints stacks boils scrubs melts drips rotates sorts prints wraps pours bakes stirs slices peels sweeps mops dusts rinses"
    ),
    "VERBED": _words(
        "folded painted stacked boiled scrubbed melted dripped rotated sorted printed wrapped poured baked stirred sliced peeled swept mopped "
        "dusted rinsed"
    ),
    "VERBING": _words(
        "folding painting stacking boiling scrubbing melting dripping rotating sorting printing wrapping pouring baking stirring slicing "
        "peeling sweeping mopping dusting rinsing"
    ),
    "ADV": _words("outside upstairs downstairs nearby indoors outdoors yesterday today tomorrow often sometimes quickly slowly twice"),
}


def _tagged(**groups: str) -> dict[str, str]:
    return {word: pos for pos, words in groups.items() for word in words.split()}


GROUP_POS: dict[str, str] = _tagged(
    PRON="he she him hers they them we us",
    POSS="his their our",
    REFL="himself herself themselves",
    NOUN="""man woman boy girl person wife husband mother father mom dad son daughter aunt uncle brother sister
    grandmother grandfather grandma grandpa child kid teenager teen adult senior immigrant citizen foreigner jew atheist
    gypsy worker lawyer doctor nurse janitor businessman businesswoman officer cop plumber cashier athlete rapper
    singer model landscaper laborer mobster brat boyfriend girlfriend gentleman lady guy dude bride groom widow
    slave refugee baby toddler englishman eskimo""",
    NOUNS="""men women people boys girls kids children parents whites blacks americans mexicans christians muslims jews
    indians asians latinos hispanics immigrants teenagers teens seniors adults citizens italians koreans homosexuals
    heterosexuals lesbians gays atheists catholics caucasians foreigners athletes lawyers doctors nurses cops guys vets
    slaves refugees africans europeans germans russians canadians arabs ladies gentlemen
    mothers fathers wives husbands sons daughters sisters brothers elders youngsters workers""",
    ADJ="""white black brown yellow american poor rich gay straight african christian young old mexican asian chinese fat
    muslim italian jewish middle caucasian native afro indian ill overweight elderly wealthy tall thin heterosexual
    retarded trans aged female male healthy latino russian canadian hispanic short homeless lesbian cis ghetto fit
    skinny homosexual normal small slim autistic english european japanese uneducated crippled ugly german spanish
    older irish british armenian hindu wiccan korean beautiful illegal disabled muscular big catholic handicapped obese
    little stupid clever heavy transgender bisexual saudi feminine masculine buddhist teenage athletic successful
    educated arab gifted blind posh average strong undocumented tiny blonde brunette texan amish scandinavian
    scandanavian french dutch swedish polish greek turkish iranian iraqi afghan syrian pakistani vietnamese thai
    filipino nigerian kenyan ethiopian somali egyptian moroccan cuban brazilian colombian peruvian puerto rican
    mormon protestant baptist atheistic lgbt queer nonbinary deaf mute dyslexic schizophrenic bipolar depressed
    pregnant infertile unemployed working lower upper rural urban southern northern western eastern floridian
    californian""",
    ADV="mentally physically never always",
)


__all__ = ["CONTROL_WORDS", "GROUP_POS", "POS_TAGS"]
