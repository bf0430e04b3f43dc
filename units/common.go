package units

import (
	"maps"
	"slices"
)

// forms is a unit's name in one language: after a quantity of one (as
// CLDR's plural rules count it) and after any other.
type forms struct{ one, other string }

// common names the units people bill services, goods and energy in, in
// the languages customers read invoices in. English follows
// Recommendation 20's names (British spelling), except C62, whose "one"
// reads as a number on an invoice. In German, masculine and neuter units
// of measure keep the singular after a number ("3 Kilogramm", "2 Paar")
// where feminine ones do not ("3 Tonnen").
var common = map[string]map[string]forms{
	// Time.
	"SEC": {"en": {"second", "seconds"}, "de": {"Sekunde", "Sekunden"}, "fr": {"seconde", "secondes"}},
	"MIN": {"en": {"minute", "minutes"}, "de": {"Minute", "Minuten"}, "fr": {"minute", "minutes"}},
	"HUR": {"en": {"hour", "hours"}, "de": {"Stunde", "Stunden"}, "fr": {"heure", "heures"}},
	"DAY": {"en": {"day", "days"}, "de": {"Tag", "Tage"}, "fr": {"jour", "jours"}},
	"WEE": {"en": {"week", "weeks"}, "de": {"Woche", "Wochen"}, "fr": {"semaine", "semaines"}},
	"MON": {"en": {"month", "months"}, "de": {"Monat", "Monate"}, "fr": {"mois", "mois"}},
	"QAN": {"en": {"quarter", "quarters"}, "de": {"Quartal", "Quartale"}, "fr": {"trimestre", "trimestres"}},
	"ANN": {"en": {"year", "years"}, "de": {"Jahr", "Jahre"}, "fr": {"an", "ans"}},
	// Counts.
	"C62": {"en": {"unit", "units"}, "de": {"Stück", "Stück"}, "fr": {"unité", "unités"}},
	"H87": {"en": {"piece", "pieces"}, "de": {"Stück", "Stück"}, "fr": {"pièce", "pièces"}},
	"EA":  {"en": {"each", "each"}, "de": {"Stück", "Stück"}, "fr": {"unité", "unités"}},
	"NAR": {"en": {"article", "articles"}, "de": {"Artikel", "Artikel"}, "fr": {"article", "articles"}},
	"PR":  {"en": {"pair", "pairs"}, "de": {"Paar", "Paar"}, "fr": {"paire", "paires"}},
	"SET": {"en": {"set", "sets"}, "de": {"Satz", "Sätze"}, "fr": {"jeu", "jeux"}},
	"LS":  {"en": {"lump sum", "lump sums"}, "de": {"Pauschale", "Pauschalen"}, "fr": {"forfait", "forfaits"}},
	"E48": {"en": {"service unit", "service units"}, "de": {"Leistungseinheit", "Leistungseinheiten"}, "fr": {"unité de service", "unités de service"}},
	// Packages (Recommendation 21).
	"XPP": {"en": {"piece", "pieces"}, "de": {"Stück", "Stück"}, "fr": {"pièce", "pièces"}},
	"XBX": {"en": {"box", "boxes"}, "de": {"Schachtel", "Schachteln"}, "fr": {"boîte", "boîtes"}},
	"XPK": {"en": {"package", "packages"}, "de": {"Paket", "Pakete"}, "fr": {"paquet", "paquets"}},
	"XPX": {"en": {"pallet", "pallets"}, "de": {"Palette", "Paletten"}, "fr": {"palette", "palettes"}},
	// Mass.
	"GRM": {"en": {"gram", "grams"}, "de": {"Gramm", "Gramm"}, "fr": {"gramme", "grammes"}},
	"KGM": {"en": {"kilogram", "kilograms"}, "de": {"Kilogramm", "Kilogramm"}, "fr": {"kilogramme", "kilogrammes"}},
	"TNE": {"en": {"tonne", "tonnes"}, "de": {"Tonne", "Tonnen"}, "fr": {"tonne", "tonnes"}},
	"LBR": {"en": {"pound", "pounds"}, "de": {"Pfund", "Pfund"}, "fr": {"livre", "livres"}},
	// Length, area, volume.
	"MMT": {"en": {"millimetre", "millimetres"}, "de": {"Millimeter", "Millimeter"}, "fr": {"millimètre", "millimètres"}},
	"CMT": {"en": {"centimetre", "centimetres"}, "de": {"Zentimeter", "Zentimeter"}, "fr": {"centimètre", "centimètres"}},
	"MTR": {"en": {"metre", "metres"}, "de": {"Meter", "Meter"}, "fr": {"mètre", "mètres"}},
	"KMT": {"en": {"kilometre", "kilometres"}, "de": {"Kilometer", "Kilometer"}, "fr": {"kilomètre", "kilomètres"}},
	"MTK": {"en": {"square metre", "square metres"}, "de": {"Quadratmeter", "Quadratmeter"}, "fr": {"mètre carré", "mètres carrés"}},
	"MLT": {"en": {"millilitre", "millilitres"}, "de": {"Milliliter", "Milliliter"}, "fr": {"millilitre", "millilitres"}},
	"LTR": {"en": {"litre", "litres"}, "de": {"Liter", "Liter"}, "fr": {"litre", "litres"}},
	"MTQ": {"en": {"cubic metre", "cubic metres"}, "de": {"Kubikmeter", "Kubikmeter"}, "fr": {"mètre cube", "mètres cubes"}},
	// Energy and data.
	"KWH": {"en": {"kilowatt hour", "kilowatt hours"}, "de": {"Kilowattstunde", "Kilowattstunden"}, "fr": {"kilowattheure", "kilowattheures"}},
	"MWH": {"en": {"megawatt hour", "megawatt hours"}, "de": {"Megawattstunde", "Megawattstunden"}, "fr": {"mégawattheure", "mégawattheures"}},
	"E34": {"en": {"gigabyte", "gigabytes"}, "de": {"Gigabyte", "Gigabyte"}, "fr": {"gigaoctet", "gigaoctets"}},
}

// Common returns, sorted, the codes that have names in en, de and fr in
// both forms: the units to offer first where someone picks one.
func Common() []string {
	return slices.Sorted(maps.Keys(common))
}
