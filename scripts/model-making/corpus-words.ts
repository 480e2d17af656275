/**
 * Word lists for the generated tokenizer corpus (corpus.ts): common English words grouped by the
 * slot they fill in sentence templates, plus names, places and tool vocabulary. Written by hand for
 * Hearth; nothing here is downloaded. The lists only need to be broad enough that the trained BPE
 * vocabulary covers everyday English, chat formatting, JSON and numbers.
 */

export const NOUNS = `
time year people way day man woman child children world life hand part place case week company
system program question work government number night point home water room mother area money story
fact month lot right study book eye job word business issue side kind head house service friend
father power hour game line end member law car city community name president team minute idea kid
body information back parent face others level office door health person art war history party
result change morning reason research girl guy moment air teacher force education foot boy age
policy process music market sense nation plan college interest death experience effect use class
control care field development role effort rate heart drug show leader light voice wife police mind
price report decision son view relationship town road arm difference value building action model
season society tax director position player record paper space ground form event official matter
center couple site project activity star table need court oil situation cost industry figure street
image phone data picture practice piece land product doctor wall patient worker news test movie
north love support technology step baby computer type attention film tree source organization hair
window evidence population site truth garden river mountain forest ocean island bridge village
kitchen window bread cheese apple orange banana coffee tea milk sugar salt pepper rice soup dinner
lunch breakfast weather rain snow wind sun moon cloud storm summer winter spring autumn language
letter message email answer problem solution example reason method function variable file folder
server client request response error value list array object string key token model training
sentence paragraph chapter library museum school student lesson homework exam garden flower seed
animal dog cat bird fish horse cow sheep rabbit mouse lion tiger bear wolf fox train bus plane ship
bicycle ticket station airport hotel restaurant shop store market bank hospital church castle
engine wheel battery screen keyboard camera clock map box bag bottle cup plate knife fork spoon
chair bed desk lamp door floor roof stair garden fence shirt shoe hat coat dress color shape size
weight height length distance speed temperature degree percent dollar euro pound price budget
`;

export const ADJECTIVES = `
good new first last long great little own other old right big high different small large next early
young important few public bad same able late hard major better economic strong possible whole free
military true federal international full special easy clear recent certain personal open red
difficult available likely short single medical current wrong private past foreign fine common poor
natural significant similar hot dead central happy serious ready simple left physical general
environmental financial blue democratic dark various entire close legal religious cold final main
green nice huge popular traditional cultural wide quiet warm bright heavy light soft loud fast slow
careful quick gentle brave calm clever curious eager fancy friendly funny helpful honest kind lazy
lucky modern nervous polite proud rare rich safe sharp shy silly smart strange sweet tall thin tiny
useful wise yellow purple orange white black brown gray pink golden silver wooden empty busy tired
hungry thirsty sleepy sunny rainy cloudy windy snowy fresh clean dirty quiet noisy cheap expensive
`;

export const VERBS = `
be have do say go get make know think take see come want look use find give tell work call try ask
need feel become leave put mean keep let begin seem help talk turn start show hear play run move
like live believe hold bring happen write provide sit stand lose pay meet include continue set learn
change lead understand watch follow stop create speak read allow add spend grow open walk win offer
remember love consider appear buy wait serve die send expect build stay fall cut reach kill remain
suggest raise pass sell require report decide pull explain answer check cook clean close count cover
cross dance draw drink drive eat fill fix fly enjoy carry catch climb collect compare visit travel
plant paint push rain share sing sleep smile solve sort swim teach test thank throw touch train
trust wash wear wish wonder worry calculate return parse convert compute search fetch update delete
`;

export const PAST_VERBS = `
was had did said went got made knew thought took saw came wanted looked used found gave told worked
called tried asked needed felt became left put meant kept let began seemed helped talked turned
started showed heard played ran moved liked lived believed held brought happened wrote sat stood lost
paid met included continued learned changed led understood watched followed stopped created spoke
read allowed added spent grew opened walked won offered remembered loved bought waited served sent
expected built stayed fell cut reached remained decided explained answered checked cooked cleaned
visited travelled planted painted shared sang slept smiled solved taught tested thanked threw
`;

export const ADVERBS = `
also very often however too usually really early never always sometimes together likely simply
generally instead actually again rather almost especially ever quickly probably already below
directly therefore else thus easily eventually exactly certainly normally currently extremely
finally constantly properly soon specifically ahead daily highly immediately relatively slowly
fairly primarily completely ultimately widely recently quietly carefully gently happily
`;

export const FUNCTION_WORDS = `
the of and to a in is it you that he was for on are with as I his they be at one have this from
or had by not word but what some we can out other were all there when up use your how said an each
she which do their time if will way about many then them write would like so these her long make
thing see him two has look more day could go come did number sound no most people my over know than
call first who may down side been now find any new work part take get place made live where after
back little only round man year came show every good me give our under name very through just form
sentence great think say help low line differ turn cause much mean before move right boy old too
same tell does set three want air well also play small end put home read hand port large spell add
even land here must big high such follow act why ask men change went light kind off need house
picture try us again animal point mother world near build self earth father head stand own page
should country found answer school grow study still learn plant cover food sun four between state
keep eye never last let thought city tree cross farm hard start might story saw far sea draw left
late run while press close night real life few north open seem together next white children begin
got walk example ease paper group always music those both mark often letter until mile river car
feet care second book carry took science eat room friend began idea fish mountain stop once base
hear horse cut sure watch color face wood main enough plain girl usual young ready above ever red
list though feel talk bird soon body dog family direct pose leave song measure door product black
short numeral class wind question happen complete ship area half rock order fire south problem piece
told knew pass since top whole king space heard best hour better true during hundred five remember
step early hold west ground interest reach fast verb sing listen six table travel less morning ten
simple several vowel toward war lay against pattern slow center love person money serve appear road
map rain rule govern pull cold notice voice unit power town fine certain fly fall lead cry dark
machine note wait plan figure star box noun field rest correct able pound done beauty drive stood
contain front teach week final gave green oh quick develop ocean warm free minute strong special
mind behind clear tail produce fact street inch multiply nothing course stay wheel full force blue
object decide surface deep moon island foot system busy test record boat common gold possible plane
instead dry wonder laugh thousand ago ran check game shape equate hot miss brought heat snow tire
bring yes distant fill east paint language among
`;

export const NAMES = `
Alice Bob Carol David Emma Frank Grace Henry Isla James Kate Liam Maya Noah Olivia Peter Quinn Rosa
Sam Tara Umar Vera Will Xena Yusuf Zoe Anna Ben Chloe Daniel Elena Felix Hannah Ivan Julia Leo Mia
Nina Oscar Paula Ravi Sofia Tom Uma Victor Wendy Amir Lucia Kenji Priya Mateo Aisha Lars Ingrid
`;

export const PLACES = `
Paris London Tokyo Berlin Madrid Rome Lisbon Dublin Oslo Vienna Prague Warsaw Athens Cairo Lagos
Nairobi Mumbai Delhi Seoul Beijing Sydney Toronto Chicago Boston Denver Seattle Austin Miami Lima
Bogota Santiago Mexico Montreal Vancouver Amsterdam Brussels Zurich Geneva Munich Hamburg Milan
Naples Venice Kyoto Osaka Singapore Bangkok Jakarta Manila Istanbul Stockholm Helsinki Copenhagen
France Spain Italy Germany Japan China India Brazil Canada Kenya Egypt Norway Sweden Poland Greece
`;

/** Words with non-ASCII letters, so multi-byte UTF-8 sequences get merges too. */
export const UNICODE_WORDS = `
café naïve façade résumé über jalapeño São Zürich München Kraków Málaga Ångström crème brûlée
piñata déjà vu coöperate Beyoncé smörgåsbord fiancée Ελλάδα Москва 東京 日本語 中文 한국어 😀 🚀 ✓ → € £ ° ±
`;

export const TECH_WORDS = `
function return const let var async await import export class interface type string number boolean
null undefined true false if else for while switch case break continue try catch throw new this
def self lambda print range len dict list tuple None True False elif pass yield with as from
json yaml html css http https url api key value id name description parameters properties required
object array integer enum default arguments result error status message content role system user
assistant tool tools call calls function_call tool_call choices index delta stream model temperature
`;

export function words(list: string): string[] {
  return list.split(/\s+/).filter((w) => w.length > 0);
}
