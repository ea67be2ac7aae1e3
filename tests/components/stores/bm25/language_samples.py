# ruff: noqa: RUF001, E501  (real text in other scripts; one sample a line)
"""Real sentences in every language the BM25 store stems, written for the tests.

Each sample holds two sentences: the first (``subject``) has a word in one inflection, the query asks for the same
word in another one (a plural for a singular, a case ending, an initial mutation, an article run together with the
noun), so only the language's stemmer can join them; the second sentence (about the weather) shares no stem with
the query. ``stopword`` is a function word of the first sentence that bm25s' stop list of the language holds (None
where bm25s has no list for it).
"""

from typing import NamedTuple


class Sample(NamedTuple):
    """Two sentences in one language, a query in another inflection than the first holds, and a stop word."""

    subject: str
    other: str
    query: str
    stopword: str | None = None


SAMPLES: dict[str, Sample] = {
    "ar": Sample("المعلمون يشرحون الدروس للطلاب في المدرسة", "الطقس بارد جدا اليوم في المدينة", "المعلم"),
    "hy": Sample("Երեխաները խաղում են այգում շների հետ", "Այսօր եղանակը շատ ցուրտ է քաղաքում", "երեխա"),
    "eu": Sample("Etxeetan bizi diren familiak pozik daude", "Gaur eguraldi hotza dago hirian", "etxe"),
    "ca": Sample("Els gats dormen a les cadires del jardí", "Avui fa molt de fred a la ciutat", "gat"),
    "cs": Sample("Děti si hrají na zahradě se psy", "Dnes je ve městě velká zima", "zahrada"),
    "da": Sample("Børnene leger i haven med hundene", "Vejret er meget koldt i byen i dag", "hund", "med"),
    "nl": Sample("De kinderen spelen in de tuinen met de honden", "Het weer is vandaag erg koud", "hond", "met"),
    "en": Sample("The children were running through the gardens", "It is cold in the city today", "garden", "the"),
    "eo": Sample("La infanoj ludas en la ĝardenoj kun la hundoj", "Hodiaŭ la vetero estas tre malvarma", "ĝardeno"),
    "et": Sample("Lapsed mängivad aedades koertega", "Täna on linnas väga külm ilm", "koer"),
    "fi": Sample("Lapset leikkivät puutarhassa koirien kanssa", "Tänään kaupungissa on hyvin kylmä sää", "puutarha"),
    "fr": Sample(
        "Les enfants jouent dans les jardins avec leurs chiens", "Il fait très froid en ville aujourd'hui", "jardin",
        "avec",
    ),
    "de": Sample(
        "Die Kinder spielen in den Gärten mit ihren Hunden", "Heute ist das Wetter in der Stadt sehr kalt", "Garten",
        "mit",
    ),
    "el": Sample("Τα παιδιά παίζουν στους κήπους με τους σκύλους", "Σήμερα ο καιρός είναι πολύ κρύος", "σκύλος"),
    "hi": Sample("बच्चे बगीचों में कुत्तों के साथ खेलते हैं", "आज शहर का मौसम बहुत ठंडा है", "कुत्ता"),
    "hu": Sample("A gyerekek a kertekben játszanak a kutyákkal", "Ma nagyon hideg az idő a városban", "kertben"),
    "id": Sample("Anak-anak bermain di taman bersama anjing mereka", "Hari ini cuaca di kota sangat dingin", "permainan"),
    "ga": Sample("Chonaic mé an teach mór i gcathair na Gaillimhe inné", "Tá an aimsir an-fhuar inniu", "cathair"),
    "it": Sample("I bambini giocano nei giardini con i loro cani", "Oggi il tempo è molto freddo", "giardino", "con"),
    "lt": Sample("Vaikai žaidžia soduose su šunimis", "Šiandien mieste labai šalta", "sodas"),
    "ne": Sample("केटाकेटीहरू बगैंचामा कुकुरहरूसँग खेल्छन्", "आज सहरमा मौसम धेरै चिसो छ", "बगैंचा"),
    "no": Sample("Barna leker i hagene med hundene", "Været er veldig kaldt i byen i dag", "hund", "med"),
    "fa": Sample("کودکان در باغ‌ها با سگ‌ها بازی می‌کنند", "امروز هوا در شهر خیلی سرد است", "کودک"),
    "pl": Sample("Dzieci bawią się w ogrodach z psami", "Dzisiaj w mieście jest bardzo zimno", "ogrodu"),
    "pt": Sample("As crianças brincam nos jardins com os seus cães", "Hoje o tempo está muito frio", "criança", "com"),
    "ro": Sample("Copiii se joacă în grădini cu câinii lor", "Astăzi vremea este foarte rece în oraș", "câine"),
    "ru": Sample(
        "Дети играют в садах вместе с собаками, когда светит солнце", "Сегодня в городе очень холодная погода",
        "собака", "когда",
    ),
    "sr": Sample("Deca se igraju u baštama sa psima", "Danas je u gradu veoma hladno vreme", "bašta"),
    "st": Sample("Bana ba bapala serapeng le dintja tsa bona", "Kajeno ho bata haholo toropong", "bapalang"),
    "es": Sample("Los niños juegan en los jardines con sus perros", "Hoy hace mucho frío en la ciudad", "jardín", "con"),
    "sv": Sample("Barnen leker i trädgårdarna med hundarna", "Vädret är mycket kallt i staden i dag", "hund", "med"),
    "ta": Sample("குழந்தைகள் தோட்டங்களில் நாய்களுடன் விளையாடுகிறார்கள்", "இன்று நகரத்தில் மிகவும் குளிர்", "தோட்டம்"),
    "tr": Sample("Çocuklar bahçelerde köpekleriyle ve kedileriyle oynuyorlar", "Bugün şehirde hava çok soğuk", "köpek", "ve"),
    "yi": Sample("די קינדער שפּילן אין די גערטנער מיט די הינט", "הײַנט איז דאָס וועטער זייער קאַלט", "קינד"),
}  # fmt: skip
