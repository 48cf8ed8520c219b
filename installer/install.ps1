<#
.SYNOPSIS
myriarch site installer for Windows (PowerShell 5.1+): puts a managed OpenTelemetry
Collector on this host.

.DESCRIPTION
The Windows twin of install.sh, with the same flags in PowerShell style (--site-id is
-SiteId). It installs the collector (versioned layout under
"$env:ProgramFiles\Myriarch\collector\versions\<v>", "current" switched as a directory
junction, which needs no symlink privilege), the upstream OpAMP Supervisor and
myriarch-updater with its Sigstore verifier beside it, writes their configurations with the
site attribute contract (site.*, deployment.environment.name) and registers Windows
services: otelcol-supervisor with New-Service, myriarch-updater with
"myriarch-updater install".

Everything is validated before anything is written; every artifact is checked against its
SHA-256 file and its minisign signature before the first file is touched. Re-running with
the same flags changes nothing; with changed flags only what differs is rewritten and only
the services whose files changed are restarted.

Artifacts (from -Artifacts DIR or an http(s) URL), for ARCH amd64|arm64:
  otelcol_<version>_windows_<ARCH>.zip      archive with otelcol-contrib.exe at its top
  opampsupervisor_windows_<ARCH>.exe        the upstream OpAMP Supervisor
  myriarch-updater_windows_<ARCH>.exe       myriarch-updater
  myriarch-sigstore_windows_<ARCH>.exe      the Sigstore verifier the updater runs (beside it)
each next to <name>.sha256 and <name>.minisig. Signatures are checked with minisign.exe,
which must be on PATH (https://jedisct1.github.io/minisign/).

The updater's configuration lets package downloads come from the -Server host only, and
from the hosts given with -CatalogMirrors (comma-separated: host, host:port or
*.example.com) for catalog entries with url: and their redirects.

-RootKey KEY|FILE (optional) pins the root key of the estate's signed keyring (RW... or a
minisign .pub file) in trust.root_keys: the keyring it signs brings the signing keys and
revocations, so signing keys rotate without touching the host.

The token is never printed; files holding it are readable by SYSTEM and Administrators only.
#>
[CmdletBinding(PositionalBinding = $false)]
param(
    [string]$Server,
    [string]$Token,
    [string]$TokenFile,
    [string]$SiteId,
    [string]$SiteType,
    [string]$SiteName,
    [string]$SiteCountry,
    [string]$SiteRegion,
    [string]$SiteTimezone,
    [string]$Environment,
    [string]$Mode = 'binary',
    [string]$CollectorVersion,
    [string]$Artifacts,
    [string]$MinisignKey,
    [string]$RootKey,
    [string]$CatalogMirrors,
    [string]$Root,
    [switch]$NoStart,
    [switch]$DryRun,
    [switch]$Uninstall,
    [switch]$Purge,
    [switch]$Help,
    [Parameter(ValueFromRemainingArguments = $true)]
    [string[]]$Unknown
)

Set-StrictMode -Version 2.0
$ErrorActionPreference = 'Stop'

$Prog = 'install.ps1'
$SupervisorService = 'otelcol-supervisor'
$UpdaterService = 'myriarch-updater'
$CollectorExe = 'otelcol-contrib.exe'
$CollectorPackage = 'otelcol-contrib'
$ContainerName = 'otelcol'
$MaxValueLen = 256

# ISO 3166-1 alpha-2 codes (the set in tzdata's iso3166.tab).
$ISO3166 = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ
BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM
DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS
GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN
KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ
MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM
PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV
SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI
VN VU WF WS YE YT ZA ZM ZW"

# IANA time zone names (zones and links of tzdata), since Windows has its own zone names.
$IanaZones = @'
Africa/Abidjan Africa/Accra Africa/Addis_Ababa Africa/Algiers Africa/Asmara Africa/Asmera
Africa/Bamako Africa/Bangui Africa/Banjul Africa/Bissau Africa/Blantyre Africa/Brazzaville
Africa/Bujumbura Africa/Cairo Africa/Casablanca Africa/Ceuta Africa/Conakry Africa/Dakar
Africa/Dar_es_Salaam Africa/Djibouti Africa/Douala Africa/El_Aaiun Africa/Freetown Africa/Gaborone
Africa/Harare Africa/Johannesburg Africa/Juba Africa/Kampala Africa/Khartoum Africa/Kigali
Africa/Kinshasa Africa/Lagos Africa/Libreville Africa/Lome Africa/Luanda Africa/Lubumbashi
Africa/Lusaka Africa/Malabo Africa/Maputo Africa/Maseru Africa/Mbabane Africa/Mogadishu
Africa/Monrovia Africa/Nairobi Africa/Ndjamena Africa/Niamey Africa/Nouakchott Africa/Ouagadougou
Africa/Porto-Novo Africa/Sao_Tome Africa/Timbuktu Africa/Tripoli Africa/Tunis Africa/Windhoek
America/Adak America/Anchorage America/Anguilla America/Antigua America/Araguaina
America/Argentina/Buenos_Aires America/Argentina/Catamarca America/Argentina/ComodRivadavia
America/Argentina/Cordoba America/Argentina/Jujuy America/Argentina/La_Rioja
America/Argentina/Mendoza America/Argentina/Rio_Gallegos America/Argentina/Salta
America/Argentina/San_Juan America/Argentina/San_Luis America/Argentina/Tucuman
America/Argentina/Ushuaia America/Aruba America/Asuncion America/Atikokan America/Atka America/Bahia
America/Bahia_Banderas America/Barbados America/Belem America/Belize America/Blanc-Sablon
America/Boa_Vista America/Bogota America/Boise America/Buenos_Aires America/Cambridge_Bay
America/Campo_Grande America/Cancun America/Caracas America/Catamarca America/Cayenne America/Cayman
America/Chicago America/Chihuahua America/Ciudad_Juarez America/Coral_Harbour America/Cordoba
America/Costa_Rica America/Coyhaique America/Creston America/Cuiaba America/Curacao
America/Danmarkshavn America/Dawson America/Dawson_Creek America/Denver America/Detroit
America/Dominica America/Edmonton America/Eirunepe America/El_Salvador America/Ensenada
America/Fort_Nelson America/Fort_Wayne America/Fortaleza America/Glace_Bay America/Godthab
America/Goose_Bay America/Grand_Turk America/Grenada America/Guadeloupe America/Guatemala
America/Guayaquil America/Guyana America/Halifax America/Havana America/Hermosillo
America/Indiana/Indianapolis America/Indiana/Knox America/Indiana/Marengo America/Indiana/Petersburg
America/Indiana/Tell_City America/Indiana/Vevay America/Indiana/Vincennes America/Indiana/Winamac
America/Indianapolis America/Inuvik America/Iqaluit America/Jamaica America/Jujuy America/Juneau
America/Kentucky/Louisville America/Kentucky/Monticello America/Knox_IN America/Kralendijk
America/La_Paz America/Lima America/Los_Angeles America/Louisville America/Lower_Princes
America/Maceio America/Managua America/Manaus America/Marigot America/Martinique America/Matamoros
America/Mazatlan America/Mendoza America/Menominee America/Merida America/Metlakatla
America/Mexico_City America/Miquelon America/Moncton America/Monterrey America/Montevideo
America/Montreal America/Montserrat America/Nassau America/New_York America/Nipigon America/Nome
America/Noronha America/North_Dakota/Beulah America/North_Dakota/Center
America/North_Dakota/New_Salem America/Nuuk America/Ojinaga America/Panama America/Pangnirtung
America/Paramaribo America/Phoenix America/Port-au-Prince America/Port_of_Spain America/Porto_Acre
America/Porto_Velho America/Puerto_Rico America/Punta_Arenas America/Rainy_River
America/Rankin_Inlet America/Recife America/Regina America/Resolute America/Rio_Branco
America/Rosario America/Santa_Isabel America/Santarem America/Santiago America/Santo_Domingo
America/Sao_Paulo America/Scoresbysund America/Shiprock America/Sitka America/St_Barthelemy
America/St_Johns America/St_Kitts America/St_Lucia America/St_Thomas America/St_Vincent
America/Swift_Current America/Tegucigalpa America/Thule America/Thunder_Bay America/Tijuana
America/Toronto America/Tortola America/Vancouver America/Virgin America/Whitehorse America/Winnipeg
America/Yakutat America/Yellowknife Antarctica/Casey Antarctica/Davis Antarctica/DumontDUrville
Antarctica/Macquarie Antarctica/Mawson Antarctica/McMurdo Antarctica/Palmer Antarctica/Rothera
Antarctica/South_Pole Antarctica/Syowa Antarctica/Troll Antarctica/Vostok Arctic/Longyearbyen
Asia/Aden Asia/Almaty Asia/Amman Asia/Anadyr Asia/Aqtau Asia/Aqtobe Asia/Ashgabat Asia/Ashkhabad
Asia/Atyrau Asia/Baghdad Asia/Bahrain Asia/Baku Asia/Bangkok Asia/Barnaul Asia/Beirut Asia/Bishkek
Asia/Brunei Asia/Calcutta Asia/Chita Asia/Choibalsan Asia/Chongqing Asia/Chungking Asia/Colombo
Asia/Dacca Asia/Damascus Asia/Dhaka Asia/Dili Asia/Dubai Asia/Dushanbe Asia/Famagusta Asia/Gaza
Asia/Harbin Asia/Hebron Asia/Ho_Chi_Minh Asia/Hong_Kong Asia/Hovd Asia/Irkutsk Asia/Istanbul
Asia/Jakarta Asia/Jayapura Asia/Jerusalem Asia/Kabul Asia/Kamchatka Asia/Karachi Asia/Kashgar
Asia/Kathmandu Asia/Katmandu Asia/Khandyga Asia/Kolkata Asia/Krasnoyarsk Asia/Kuala_Lumpur
Asia/Kuching Asia/Kuwait Asia/Macao Asia/Macau Asia/Magadan Asia/Makassar Asia/Manila Asia/Muscat
Asia/Nicosia Asia/Novokuznetsk Asia/Novosibirsk Asia/Omsk Asia/Oral Asia/Phnom_Penh Asia/Pontianak
Asia/Pyongyang Asia/Qatar Asia/Qostanay Asia/Qyzylorda Asia/Rangoon Asia/Riyadh Asia/Saigon
Asia/Sakhalin Asia/Samarkand Asia/Seoul Asia/Shanghai Asia/Singapore Asia/Srednekolymsk Asia/Taipei
Asia/Tashkent Asia/Tbilisi Asia/Tehran Asia/Tel_Aviv Asia/Thimbu Asia/Thimphu Asia/Tokyo Asia/Tomsk
Asia/Ujung_Pandang Asia/Ulaanbaatar Asia/Ulan_Bator Asia/Urumqi Asia/Ust-Nera Asia/Vientiane
Asia/Vladivostok Asia/Yakutsk Asia/Yangon Asia/Yekaterinburg Asia/Yerevan Atlantic/Azores
Atlantic/Bermuda Atlantic/Canary Atlantic/Cape_Verde Atlantic/Faeroe Atlantic/Faroe
Atlantic/Jan_Mayen Atlantic/Madeira Atlantic/Reykjavik Atlantic/South_Georgia Atlantic/St_Helena
Atlantic/Stanley Australia/ACT Australia/Adelaide Australia/Brisbane Australia/Broken_Hill
Australia/Canberra Australia/Currie Australia/Darwin Australia/Eucla Australia/Hobart Australia/LHI
Australia/Lindeman Australia/Lord_Howe Australia/Melbourne Australia/NSW Australia/North
Australia/Perth Australia/Queensland Australia/South Australia/Sydney Australia/Tasmania
Australia/Victoria Australia/West Australia/Yancowinna Brazil/Acre Brazil/DeNoronha Brazil/East
Brazil/West CET CST6CDT Canada/Atlantic Canada/Central Canada/Eastern Canada/Mountain
Canada/Newfoundland Canada/Pacific Canada/Saskatchewan Canada/Yukon Chile/Continental
Chile/EasterIsland Cuba EET EST EST5EDT Egypt Eire Etc/GMT Etc/GMT+0 Etc/GMT+1 Etc/GMT+10 Etc/GMT+11
Etc/GMT+12 Etc/GMT+2 Etc/GMT+3 Etc/GMT+4 Etc/GMT+5 Etc/GMT+6 Etc/GMT+7 Etc/GMT+8 Etc/GMT+9 Etc/GMT-0
Etc/GMT-1 Etc/GMT-10 Etc/GMT-11 Etc/GMT-12 Etc/GMT-13 Etc/GMT-14 Etc/GMT-2 Etc/GMT-3 Etc/GMT-4
Etc/GMT-5 Etc/GMT-6 Etc/GMT-7 Etc/GMT-8 Etc/GMT-9 Etc/GMT0 Etc/Greenwich Etc/UCT Etc/UTC
Etc/Universal Etc/Zulu Europe/Amsterdam Europe/Andorra Europe/Astrakhan Europe/Athens Europe/Belfast
Europe/Belgrade Europe/Berlin Europe/Bratislava Europe/Brussels Europe/Bucharest Europe/Budapest
Europe/Busingen Europe/Chisinau Europe/Copenhagen Europe/Dublin Europe/Gibraltar Europe/Guernsey
Europe/Helsinki Europe/Isle_of_Man Europe/Istanbul Europe/Jersey Europe/Kaliningrad Europe/Kiev
Europe/Kirov Europe/Kyiv Europe/Lisbon Europe/Ljubljana Europe/London Europe/Luxembourg
Europe/Madrid Europe/Malta Europe/Mariehamn Europe/Minsk Europe/Monaco Europe/Moscow Europe/Nicosia
Europe/Oslo Europe/Paris Europe/Podgorica Europe/Prague Europe/Riga Europe/Rome Europe/Samara
Europe/San_Marino Europe/Sarajevo Europe/Saratov Europe/Simferopol Europe/Skopje Europe/Sofia
Europe/Stockholm Europe/Tallinn Europe/Tirane Europe/Tiraspol Europe/Ulyanovsk Europe/Uzhgorod
Europe/Vaduz Europe/Vatican Europe/Vienna Europe/Vilnius Europe/Volgograd Europe/Warsaw
Europe/Zagreb Europe/Zaporozhye Europe/Zurich GB GB-Eire GMT GMT+0 GMT-0 GMT0 Greenwich HST Hongkong
Iceland Indian/Antananarivo Indian/Chagos Indian/Christmas Indian/Cocos Indian/Comoro
Indian/Kerguelen Indian/Mahe Indian/Maldives Indian/Mauritius Indian/Mayotte Indian/Reunion Iran
Israel Jamaica Japan Kwajalein Libya MET MST MST7MDT Mexico/BajaNorte Mexico/BajaSur Mexico/General
NZ NZ-CHAT Navajo PRC PST8PDT Pacific/Apia Pacific/Auckland Pacific/Bougainville Pacific/Chatham
Pacific/Chuuk Pacific/Easter Pacific/Efate Pacific/Enderbury Pacific/Fakaofo Pacific/Fiji
Pacific/Funafuti Pacific/Galapagos Pacific/Gambier Pacific/Guadalcanal Pacific/Guam Pacific/Honolulu
Pacific/Johnston Pacific/Kanton Pacific/Kiritimati Pacific/Kosrae Pacific/Kwajalein Pacific/Majuro
Pacific/Marquesas Pacific/Midway Pacific/Nauru Pacific/Niue Pacific/Norfolk Pacific/Noumea
Pacific/Pago_Pago Pacific/Palau Pacific/Pitcairn Pacific/Pohnpei Pacific/Ponape Pacific/Port_Moresby
Pacific/Rarotonga Pacific/Saipan Pacific/Samoa Pacific/Tahiti Pacific/Tarawa Pacific/Tongatapu
Pacific/Truk Pacific/Wake Pacific/Wallis Pacific/Yap Poland Portugal ROC ROK Singapore Turkey UCT
US/Alaska US/Aleutian US/Arizona US/Central US/East-Indiana US/Eastern US/Hawaii US/Indiana-Starke
US/Michigan US/Mountain US/Pacific US/Samoa UTC Universal W-SU WET Zulu
'@

if ($Help) {
    Get-Help $PSCommandPath -Detailed
    exit 0
}

$Errors = New-Object System.Collections.Generic.List[string]
function Add-Problem([string]$Message) { $Errors.Add("  - $Message") }
function Say([string]$Message) { Write-Output $Message }
function Fail([string]$Message) {
    [Console]::Error.WriteLine("${Prog}: $Message")
    exit 1
}
# Native commands run with ErrorActionPreference Continue: under Stop, Windows PowerShell
# 5.1 turns any stderr line of a native command into a terminating error.
function Invoke-Native([string]$Exe, [string[]]$Arguments) {
    $saved = $ErrorActionPreference
    $ErrorActionPreference = 'Continue'
    try { $out = & $Exe @Arguments 2>&1 | Out-String }
    finally { $ErrorActionPreference = $saved }
    return @{ Code = $LASTEXITCODE; Output = $out.Trim() }
}
function Test-Control([string]$Value) { return $Value -match '[\x00-\x1f\x7f]' }

function Test-Text([string]$Flag, [string]$Value) {
    if (Test-Control $Value) { Add-Problem "${Flag}: must be one line without control characters"; return $false }
    if ($Value.Contains('$')) { Add-Problem "$Flag `"$Value`": must not contain `$ (the supervisor expands `${...} in its configuration)"; return $false }
    if ($Value.Length -gt $MaxValueLen) { Add-Problem "${Flag}: longer than $MaxValueLen characters"; return $false }
    return $true
}

function Test-Required([string]$Flag, [string]$Value) {
    if ([string]::IsNullOrEmpty($Value)) { Add-Problem "$Flag is required"; return $false }
    return (Test-Text $Flag $Value)
}

# Get-MinisignKey FLAG VALUE: the minisign public key (RW...) VALUE is or the .pub file
# VALUE names holds; $null after reporting a problem naming FLAG.
function Get-MinisignKey([string]$Flag, [string]$Value) {
    $key = $Value
    if ($key -and (Test-Path -LiteralPath $key -PathType Leaf)) {
        $key = @(Get-Content -LiteralPath $key | Where-Object { $_ -notmatch '^untrusted comment:' -and $_.Trim() }) | Select-Object -First 1
        if ($key) { $key = $key.Trim() }
    }
    if ($key -cmatch '^RW[A-Za-z0-9+/]{54}$') { return $key }
    Add-Problem "${Flag}: not a minisign public key (RW followed by 54 base64 characters) nor a file holding one"
    return $null
}

# ---------------------------------------------------------------- validation

foreach ($u in @($Unknown | Where-Object { $_ })) { Add-Problem "${u}: unknown flag" }

$IsAdmin = ([Security.Principal.WindowsPrincipal][Security.Principal.WindowsIdentity]::GetCurrent()).IsInRole(
    [Security.Principal.WindowsBuiltInRole]::Administrator)
if ($PSBoundParameters.ContainsKey('Root')) {
    if ([string]::IsNullOrEmpty($Root)) { Add-Problem '-Root: empty' }
    elseif ((Test-Path -LiteralPath $Root) -and -not (Test-Path -LiteralPath $Root -PathType Container)) { Add-Problem "-Root ${Root}: not a directory" }
    elseif (-not $NoStart) { Add-Problem "-Root needs -NoStart: services can only be registered on this system's root" }
} elseif (-not $IsAdmin) {
    Add-Problem 'must run as Administrator (or install under a prefix with -Root DIR -NoStart)'
}

$Arch = switch ($env:PROCESSOR_ARCHITECTURE) { 'AMD64' { 'amd64' } 'ARM64' { 'arm64' } default { $null } }
$ArtifactsUrl = $false

if (-not $Uninstall) {
    if ($Mode -ne 'binary' -and $Mode -ne 'container') { Add-Problem "-Mode `"$Mode`": must be binary or container" }

    if ([string]::IsNullOrEmpty($Server)) { Add-Problem '-Server is required' }
    elseif (Test-Control $Server) { Add-Problem '-Server: must be one line without control characters' }
    elseif ($Server -match '[\s"$\\]') { Add-Problem "-Server `"$Server`": must not contain spaces, quotes, `$ or backslashes" }
    elseif ($Server -notmatch '^(ws|wss|http|https)://') { Add-Problem "-Server `"$Server`": must be a ws://, wss://, http:// or https:// URL" }
    elseif ($Server -notmatch '^[a-z]+://[^/?]+') { Add-Problem "-Server `"$Server`": has no host" }

    foreach ($m in ($CatalogMirrors -split ',' | Where-Object { $CatalogMirrors })) {
        if ($m -notmatch '^(\*\.)?[A-Za-z0-9.:\[\]-]+$' -or $m -match '://' -or $m -match ':$') {
            Add-Problem "-CatalogMirrors `"$m`": a host, host:port or *.example.com, not a URL"
        }
    }

    $TokenSet = $PSBoundParameters.ContainsKey('Token')
    if ($TokenSet -and $TokenFile) { Add-Problem '-Token and -TokenFile: give only one of them' }
    elseif ($TokenFile) {
        if (-not (Test-Path -LiteralPath $TokenFile -PathType Leaf)) { Add-Problem "-TokenFile ${TokenFile}: not a readable file" }
        else {
            $Token = ([System.IO.File]::ReadAllText((Resolve-Path -LiteralPath $TokenFile).ProviderPath)).Trim()
            $TokenSet = $true
            if (-not $Token) { Add-Problem "-TokenFile ${TokenFile}: the token is empty" }
        }
    } elseif (-not $TokenSet) { Add-Problem '-Token or -TokenFile is required' }
    elseif (-not $Token) { Add-Problem '-Token: the token is empty' }
    if ($Token -and $Token -cnotmatch '^[A-Za-z0-9._~+/=-]+$') {
        Add-Problem 'token: contains characters not allowed in a bearer token (allowed: A-Z a-z 0-9 - . _ ~ + / =)'
    }

    if (-not $PSBoundParameters.ContainsKey('SiteId') -or $SiteId -eq '') { Add-Problem '-SiteId is required' }
    else { [void](Test-Text '-SiteId' $SiteId) }

    if (Test-Required '-SiteType' $SiteType) {
        if ($SiteType -cne $SiteType.ToLowerInvariant()) { Add-Problem "-SiteType `"$SiteType`": must be lower case ($($SiteType.ToLowerInvariant()))" }
    }
    if ($SiteName) { [void](Test-Text '-SiteName' $SiteName) }
    if ($SiteRegion) { [void](Test-Text '-SiteRegion' $SiteRegion) }

    if (Test-Required '-SiteCountry' $SiteCountry) {
        if ($SiteCountry -match '^[A-Za-z]{2}$' -and $SiteCountry -cnotmatch '^[A-Z]{2}$') {
            Add-Problem "-SiteCountry `"$SiteCountry`": must be upper case ($($SiteCountry.ToUpperInvariant()))"
        } elseif ($SiteCountry -cnotmatch '^[A-Z]{2}$') {
            Add-Problem "-SiteCountry `"$SiteCountry`": must be an ISO 3166-1 alpha-2 code (two upper-case letters, e.g. DE)"
        } elseif (-not ((" " + ($ISO3166 -replace '\s+', ' ') + " ").Contains(" $SiteCountry "))) {
            Add-Problem "-SiteCountry `"$SiteCountry`": not an ISO 3166-1 alpha-2 country code"
        }
    }

    if (Test-Required '-SiteTimezone' $SiteTimezone) {
        $zones = $IanaZones -split '\s+'
        if ($zones -cnotcontains $SiteTimezone) {
            Add-Problem "-SiteTimezone `"$SiteTimezone`": not an IANA time zone (e.g. Europe/Amsterdam)"
        }
    }

    [void](Test-Required '-Environment' $Environment)

    if ($Mode -eq 'binary') {
        if ($CollectorVersion) { $CollectorVersion = $CollectorVersion -replace '^v', '' }
        if (-not $CollectorVersion) { Add-Problem '-CollectorVersion is required in binary mode' }
        elseif ($CollectorVersion -notmatch '^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$') {
            Add-Problem "-CollectorVersion `"$CollectorVersion`": must be a version like 0.149.0"
        }
    }

    if (-not $Artifacts) { Add-Problem '-Artifacts is required' }
    elseif ($Artifacts -match '^https?://.') { $ArtifactsUrl = $true }
    elseif ($Artifacts -match '^[a-z]+://') { Add-Problem "-Artifacts `"$Artifacts`": only http:// and https:// URLs or a directory" }
    elseif (-not (Test-Path -LiteralPath $Artifacts -PathType Container)) { Add-Problem "-Artifacts ${Artifacts}: no such directory" }

    if (-not $MinisignKey) { Add-Problem '-MinisignKey is required' }
    else { $MinisignKey = Get-MinisignKey '-MinisignKey' $MinisignKey }
    if ($PSBoundParameters.ContainsKey('RootKey')) { $RootKey = Get-MinisignKey '-RootKey' $RootKey }

    if ($Purge) { Add-Problem '-Purge only goes with -Uninstall' }
    if (-not $Arch) { Add-Problem "unsupported processor architecture $env:PROCESSOR_ARCHITECTURE (supported: AMD64, ARM64)" }
    if (-not $DryRun -and -not (Get-Command minisign.exe -ErrorAction SilentlyContinue)) {
        Add-Problem 'minisign.exe not found on PATH: needed to check artifact signatures'
    }
}

if ($Errors.Count -gt 0) {
    $n = $Errors.Count
    $what = if ($n -eq 1) { '1 problem' } else { "$n problems" }
    [Console]::Error.WriteLine("${Prog}: $what, nothing was changed:")
    foreach ($e in $Errors) { [Console]::Error.WriteLine($e) }
    [Console]::Error.WriteLine("Run Get-Help .\$Prog -Detailed for the flags.")
    exit 2
}

# ---------------------------------------------------------------- layout

if ($PSBoundParameters.ContainsKey('Root')) {
    $Root = [System.IO.Path]::GetFullPath($Root).TrimEnd('\')
    $ProgDir = Join-Path $Root 'Program Files\Myriarch'
    $DataDir = Join-Path $Root 'ProgramData'
} else {
    $ProgDir = Join-Path $env:ProgramFiles 'Myriarch'
    $DataDir = $env:ProgramData
}
$BinDir = Join-Path $ProgDir 'bin'
$CollDir = Join-Path $ProgDir 'collector'
$EtcM = Join-Path $DataDir 'Myriarch'
$EtcO = Join-Path $DataDir 'Otelcol'
$Storage = Join-Path $EtcO 'Supervisor'
$State = Join-Path $EtcM 'state'
$SupConf = Join-Path $EtcO 'supervisor.yaml'
$UpdConf = Join-Path $EtcM 'updater.yaml'
$TokenPath = Join-Path $EtcM 'token'
$SupExe = Join-Path $BinDir 'opampsupervisor.exe'
$UpdExe = Join-Path $BinDir 'myriarch-updater.exe'
# The updater runs its Sigstore verifier from its own directory.
$SigExe = Join-Path $BinDir 'myriarch-sigstore.exe'

# ---------------------------------------------------------------- generated files

function Q([string]$Value) { return '"' + ($Value -replace '\\', '\\' -replace '"', '\"') + '"' }

# The host of -Server (without user or port): artifact downloads come from it.
function Get-ServerHost {
    $h = ($Server -replace '^[a-z]+://', '') -replace '[/?].*$', ''
    $h = $h -replace '^.*@', ''
    if ($h -match '^(\[.*\])(:\d*)?$') { return $Matches[1] }
    return ($h -replace ':[^:]*$', '')
}

function Get-Endpoint {
    if ($Server -match '^[a-z]+://[^/]+/.') { return $Server }
    return ($Server.TrimEnd('/') + '/v1/opamp')
}

function Get-SupervisorYaml {
    $exe = Join-Path $CollDir "current\$CollectorExe"
    $lines = @(
        '# Written by the myriarch site installer (install.ps1); re-run it to change this file.',
        'server:',
        "  endpoint: $(Q (Get-Endpoint))",
        '  headers:',
        "    Authorization: `"Bearer $Token`"",
        'capabilities:',
        '  accepts_remote_config: true',
        '  reports_remote_config: true',
        '  reports_effective_config: true',
        '  accepts_restart_command: true',
        '  reports_health: true',
        '  reports_heartbeat: true',
        '  # The collector sends its own telemetry only where its fleet names a destination.',
        '  reports_own_metrics: true',
        '  reports_own_logs: true',
        '  reports_own_traces: true',
        'storage:',
        "  directory: $(Q $Storage)",
        'agent:',
        "  executable: $(Q $exe)",
        '  description:',
        '    non_identifying_attributes:',
        "      site.id: $(Q $SiteId)",
        "      site.type: $(Q $SiteType)")
    if ($SiteName) { $lines += "      site.name: $(Q $SiteName)" }
    $lines += "      site.country: $(Q $SiteCountry)"
    if ($SiteRegion) { $lines += "      site.region: $(Q $SiteRegion)" }
    $lines += "      site.timezone: $(Q $SiteTimezone)"
    $lines += "      deployment.environment.name: $(Q $Environment)"
    return (($lines -join "`n") + "`n")
}

function Get-UpdaterYaml {
    $lines = @(
        '# Written by the myriarch site installer (install.ps1); re-run it to change this file.',
        'server:',
        "  endpoint: $(Q (Get-Endpoint))",
        "  token_file: $(Q $TokenPath)",
        "mode: $Mode",
        'supervisor:',
        "  storage_dir: $(Q $Storage)")
    if ($Mode -eq 'binary') { $lines += @('  control: service', "  service: $SupervisorService") }
    $lines += @('collector:', "  package: $CollectorPackage", "  root: $(Q $CollDir)", "  executable: $CollectorExe")
    if ($Mode -eq 'container') { $lines += @('container:', "  name: $ContainerName") }
    $lines += @('trust:',
        '  # Going back to a collector version this host ran and confirmed healthy is allowed;',
        '  # an older version it never confirmed is refused unless allow_downgrade: true.',
        '  minisign_public_keys:', "    - `"$MinisignKey`"")
    # The estate's keyring, signed by this root key, brings the signing keys and revocations.
    if ($RootKey) { $lines += @('  root_keys:', "    - `"$RootKey`"") }
    $lines += @('  require_signature: true', '  download_hosts:', "    - $(Q (Get-ServerHost))")
    if ($CatalogMirrors) { foreach ($m in ($CatalogMirrors -split ',')) { $lines += "    - $(Q $m)" } }
    $lines += "state_dir: $(Q $State)"
    return (($lines -join "`n") + "`n")
}

# ---------------------------------------------------------------- artifacts

$Work = $null
function Get-Artifact([string]$Name) {
    $dest = Join-Path $Work $Name
    if ($ArtifactsUrl) {
        $url = $Artifacts.TrimEnd('/') + '/' + $Name
        try { Invoke-WebRequest -UseBasicParsing -Uri $url -OutFile $dest }
        catch { Fail "cannot download ${url}: $($_.Exception.Message); nothing was installed" }
    } else {
        $src = Join-Path $Artifacts $Name
        if (-not (Test-Path -LiteralPath $src -PathType Leaf)) { Fail "artifact $src not found; nothing was installed" }
        Copy-Item -LiteralPath $src -Destination $dest
    }
    return $dest
}

function Confirm-Artifact([string]$Name) {
    $file = Get-Artifact $Name
    $sumFile = Get-Artifact "$Name.sha256"
    $sig = Get-Artifact "$Name.minisig"
    $want = ((Get-Content -LiteralPath $sumFile -TotalCount 1) -split '\s+')[0].ToLowerInvariant()
    if ($want -notmatch '^[0-9a-f]{64}$') { Fail "artifact ${Name}: $Name.sha256 holds no SHA-256 digest; nothing was installed" }
    $got = (Get-FileHash -LiteralPath $file -Algorithm SHA256).Hash.ToLowerInvariant()
    if ($want -ne $got) { Fail "artifact ${Name}: SHA-256 mismatch (expected $want, got $got); nothing was installed" }
    $r = Invoke-Native 'minisign.exe' @('-V', '-q', '-P', $MinisignKey, '-m', $file, '-x', $sig)
    if ($r.Code -ne 0) { Fail "artifact ${Name}: minisign signature does not verify with the given key ($($r.Output)); nothing was installed" }
    return $file
}

function Expand-Collector([string]$Archive) {
    Add-Type -AssemblyName System.IO.Compression.FileSystem
    try { $zip = [System.IO.Compression.ZipFile]::OpenRead($Archive) }
    catch { Fail "artifact ${CollectorArt}: not a zip archive; nothing was installed" }
    try {
        foreach ($e in $zip.Entries) {
            if ($e.FullName -match '(^|[\\/])\.\.([\\/]|$)' -or $e.FullName -match '^([\\/]|[A-Za-z]:)') {
                Fail "artifact ${CollectorArt}: holds an absolute path or '..'; nothing was installed"
            }
        }
    } finally { $zip.Dispose() }
    $dir = Join-Path $Work 'collector'
    Expand-Archive -LiteralPath $Archive -DestinationPath $dir
    $exe = Join-Path $dir $CollectorExe
    if (-not (Test-Path -LiteralPath $exe -PathType Leaf)) { Fail "artifact ${CollectorArt}: has no $CollectorExe at its top; nothing was installed" }
    # Catches a wrong architecture, corruption or a mislabeled build before anything changes.
    $r = Invoke-Native $exe @('--version')
    if ($r.Code -ne 0) { Fail "artifact ${CollectorArt}: $CollectorExe --version failed; nothing was installed" }
    if (-not $r.Output.Contains($CollectorVersion)) { Fail "artifact ${CollectorArt}: $CollectorExe --version does not report $CollectorVersion; nothing was installed" }
    return $dir
}

# ---------------------------------------------------------------- applying changes

$Changes = 0
$ChangedSup = $false
$ChangedUpd = $false

function Set-Changed([string]$Group) {
    $script:Changes++
    if ($Group -eq 'sup') { $script:ChangedSup = $true }
    if ($Group -eq 'upd') { $script:ChangedUpd = $true }
}

function Confirm-Dir([string]$Path) {
    if (Test-Path -LiteralPath $Path -PathType Container) { return }
    if (Test-Path -LiteralPath $Path) { Fail "$Path exists and is not a directory" }
    Set-Changed ''
    if ($DryRun) { Say "would create directory $Path"; return }
    [void](New-Item -ItemType Directory -Path $Path -Force)
    Say "created $Path"
}

# Restrict a file to SYSTEM and Administrators (the 0600 of install.sh).
function Protect-File([string]$Path) {
    $r = Invoke-Native 'icacls.exe' @($Path, '/inheritance:r', '/grant:r', '*S-1-5-18:F', '*S-1-5-32-544:F')
    if ($r.Code -ne 0) { Fail "cannot restrict access to ${Path}: $($r.Output)" }
}

function Test-Protected([string]$Path) {
    $acl = Get-Acl -LiteralPath $Path
    if (-not $acl.AreAccessRulesProtected) { return $false }
    foreach ($r in $acl.Access) {
        $sid = $r.IdentityReference.Translate([Security.Principal.SecurityIdentifier]).Value
        if ($sid -ne 'S-1-5-18' -and $sid -ne 'S-1-5-32-544') { return $false }
    }
    return $true
}

# Put-File SRC DEST GROUP SECRET: install SRC as DEST unless DEST has that content already.
function Put-File([string]$Src, [string]$Dest, [string]$Group, [bool]$Secret) {
    if ((Test-Path -LiteralPath $Dest -PathType Leaf) -and
        ((Get-FileHash -LiteralPath $Src -Algorithm SHA256).Hash -eq (Get-FileHash -LiteralPath $Dest -Algorithm SHA256).Hash) -and
        (-not $Secret -or (Test-Protected $Dest))) {
        return
    }
    Set-Changed $Group
    if ($DryRun) {
        if (Test-Path -LiteralPath $Dest) { Say "would update $Dest" } else { Say "would write $Dest" }
        return
    }
    $tmp = Join-Path (Split-Path -Parent $Dest) (".$(Split-Path -Leaf $Dest).tmp.$PID")
    Copy-Item -LiteralPath $Src -Destination $tmp -Force
    if ($Secret) { Protect-File $tmp }
    Move-Item -LiteralPath $tmp -Destination $Dest -Force
    Say "wrote $Dest"
}

function Write-Generated([string]$Name, [string]$Text) {
    $p = Join-Path $Work $Name
    [System.IO.File]::WriteAllText($p, $Text, (New-Object System.Text.UTF8Encoding $false))
    return $p
}

function Install-Collector([string]$Unpacked) {
    $versions = Join-Path $CollDir 'versions'
    $vdir = Join-Path $versions $CollectorVersion
    $current = Join-Path $CollDir 'current'
    if ($DryRun) {
        Say "would unpack $CollectorArt into $vdir (unless it is there already)"
    } else {
        $same = (Test-Path -LiteralPath (Join-Path $vdir $CollectorExe)) -and
            ((Get-FileHash -LiteralPath (Join-Path $Unpacked $CollectorExe)).Hash -eq (Get-FileHash -LiteralPath (Join-Path $vdir $CollectorExe)).Hash)
        if (-not $same) {
            $tmp = Join-Path $versions ".$CollectorVersion.tmp.$PID"
            if (Test-Path -LiteralPath $tmp) { Remove-Item -LiteralPath $tmp -Recurse -Force }
            Copy-Item -LiteralPath $Unpacked -Destination $tmp -Recurse
            if (Test-Path -LiteralPath $vdir) { Remove-Item -LiteralPath $vdir -Recurse -Force }
            Move-Item -LiteralPath $tmp -Destination $vdir
            Say "installed collector $CollectorVersion in $vdir"
            Set-Changed 'sup'
        }
    }
    $item = Get-Item -LiteralPath $current -ErrorAction SilentlyContinue
    if ($item -and $item.LinkType -eq 'Junction' -and (@($item.Target)[0].TrimEnd('\') -eq $vdir)) { return }
    if ($item -and -not $item.LinkType) { Fail "$current exists and is not a junction" }
    Set-Changed 'sup'
    if ($DryRun) { Say "would switch $current to $vdir"; return }
    # A junction cannot be replaced atomically: the supervisor is stopped around the switch.
    if (-not $NoStart -and (Get-Service -Name $SupervisorService -ErrorAction SilentlyContinue)) {
        Stop-Service -Name $SupervisorService
    }
    if ($item) { cmd.exe /c rmdir "$current" | Out-Null }
    [void](New-Item -ItemType Junction -Path $current -Value $vdir)
    Say "switched $current to $vdir"
}

function Register-Services {
    if ($NoStart) {
        Say "services not registered (-NoStart): $SupervisorService $UpdaterService"
        return
    }
    if ($Mode -eq 'binary') {
        $bin = "`"$SupExe`" --config `"$SupConf`""
        $svc = Get-CimInstance -ClassName Win32_Service -Filter "Name='$SupervisorService'"
        if (-not $svc) {
            if ($DryRun) { Say "would register service $SupervisorService" }
            else {
                [void](New-Service -Name $SupervisorService -BinaryPathName $bin -DisplayName 'OpenTelemetry Collector (OpAMP Supervisor, myriarch)' -StartupType Automatic)
                [void](Invoke-Native 'sc.exe' @('failure', $SupervisorService, 'reset=', '86400', 'actions=', 'restart/5000/restart/5000/restart/5000'))
                Say "registered service $SupervisorService"
            }
        } elseif ($svc.PathName -ne $bin) {
            Set-Changed 'sup'
            if ($DryRun) { Say "would update service $SupervisorService" }
            else { [void](Invoke-Native 'sc.exe' @('config', $SupervisorService, 'binPath=', $bin)) }
        }
    }
    if (-not (Get-Service -Name $UpdaterService -ErrorAction SilentlyContinue)) {
        if ($DryRun) { Say "would run: $UpdExe install --config $UpdConf" }
        else {
            $r = Invoke-Native $UpdExe @('install', '--config', $UpdConf)
            if ($r.Code -ne 0) { Fail "myriarch-updater install failed (exit $($r.Code)): $($r.Output)" }
        }
    }
    $names = @($UpdaterService)
    if ($Mode -eq 'binary') { $names = @($SupervisorService, $UpdaterService) }
    foreach ($n in $names) {
        $changed = if ($n -eq $SupervisorService) { $ChangedSup } else { $ChangedUpd }
        if ($DryRun) {
            if ($changed) { Say "would restart $n" } else { Say "would start $n if it is not running" }
            continue
        }
        $s = Get-Service -Name $n
        if ($changed -and $s.Status -eq 'Running') { Restart-Service -Name $n }
        elseif ($s.Status -ne 'Running') { Start-Service -Name $n }
    }
}

function Invoke-Install {
    $script:CollectorArt = "otelcol_${CollectorVersion}_windows_$Arch.zip"
    $supArt = "opampsupervisor_windows_$Arch.exe"
    $updArt = "myriarch-updater_windows_$Arch.exe"
    $sigArt = "myriarch-sigstore_windows_$Arch.exe"
    $script:Work = Join-Path ([System.IO.Path]::GetTempPath()) ("myriarch-install." + [guid]::NewGuid().ToString('N'))
    [void](New-Item -ItemType Directory -Path $Work)
    try {
        $unpacked = $null
        if ($DryRun) {
            Say 'plan (dry run, nothing is changed):'
            Say "  mode $Mode, endpoint $(Get-Endpoint), artifacts from $Artifacts"
            if ($Mode -eq 'binary') { Say "would fetch and verify (sha256 + minisign): $CollectorArt $supArt $updArt $sigArt" }
            else { Say "would fetch and verify (sha256 + minisign): $updArt $sigArt" }
        } else {
            # Every artifact is verified before the first file is written.
            if ($Mode -eq 'binary') {
                $collZip = Confirm-Artifact $CollectorArt
                $supFile = Confirm-Artifact $supArt
            }
            $updFile = Confirm-Artifact $updArt
            $sigFile = Confirm-Artifact $sigArt
            if ($Mode -eq 'binary') { $unpacked = Expand-Collector $collZip }
        }
        $tokenFile = Write-Generated 'token' ($Token + "`n")
        Protect-File $tokenFile
        $supYaml = Write-Generated 'supervisor.yaml' (Get-SupervisorYaml)
        Protect-File $supYaml
        $updYaml = Write-Generated 'updater.yaml' (Get-UpdaterYaml)

        foreach ($d in @($BinDir, $EtcM, $EtcO, $Storage, $State)) { Confirm-Dir $d }
        if ($Mode -eq 'binary') {
            Confirm-Dir (Join-Path $CollDir 'versions')
            Install-Collector $unpacked
            if ($DryRun) { Say "would install $SupExe if it differs from $supArt" }
            else { Put-File $supFile $SupExe 'sup' $false }
        }
        # The helper goes first, so that a new updater never starts without it.
        if ($DryRun) {
            Say "would install $SigExe if it differs from $sigArt"
            Say "would install $UpdExe if it differs from $updArt"
        } else {
            Put-File $sigFile $SigExe 'upd' $false
            Put-File $updFile $UpdExe 'upd' $false
        }
        Put-File $tokenFile $TokenPath 'upd' $true
        Put-File $supYaml $SupConf 'sup' $true
        Put-File $updYaml $UpdConf 'upd' $false
        Register-Services
        if ($DryRun) { Say 'dry run: nothing was changed' }
        elseif ($Changes -eq 0) { Say 'nothing changed: the installation already matches these flags' }
        else { Say "done: $Changes change(s)" }
    } finally {
        Remove-Item -LiteralPath $Work -Recurse -Force -ErrorAction SilentlyContinue
    }
}

function Remove-Paths([string[]]$Paths) {
    foreach ($p in $Paths) {
        if (Test-Path -LiteralPath $p) {
            if ($DryRun) { Say "would remove $p" }
            else {
                $item = Get-Item -LiteralPath $p
                if ($item.LinkType) { cmd.exe /c rmdir "$p" | Out-Null }
                else { Remove-Item -LiteralPath $p -Recurse -Force }
                Say "removed $p"
            }
        }
    }
}

function Invoke-Uninstall {
    if (-not $NoStart) {
        if (Get-Service -Name $UpdaterService -ErrorAction SilentlyContinue) {
            if ($DryRun) { Say "would run: $UpdExe uninstall" }
            else {
                Stop-Service -Name $UpdaterService -ErrorAction SilentlyContinue
                [void](Invoke-Native $UpdExe @('uninstall'))
            }
        }
        if (Get-Service -Name $SupervisorService -ErrorAction SilentlyContinue) {
            if ($DryRun) { Say "would stop and delete service $SupervisorService" }
            else {
                Stop-Service -Name $SupervisorService -ErrorAction SilentlyContinue
                [void](Invoke-Native 'sc.exe' @('delete', $SupervisorService))
            }
        }
    }
    Remove-Paths @((Join-Path $CollDir 'current'), $UpdExe, $SigExe, $SupExe, $CollDir)
    foreach ($d in @($BinDir, $ProgDir)) {
        if ((Test-Path -LiteralPath $d) -and -not (Get-ChildItem -LiteralPath $d -Force)) { Remove-Paths @($d) }
    }
    if ($Purge) { Remove-Paths @($EtcM, $SupConf, $Storage) }
    else { Say "kept configuration and data ($EtcM, $SupConf, $Storage); -Purge removes them" }
    if ($DryRun) { Say 'dry run: nothing was changed' }
}

if ($Uninstall) { Invoke-Uninstall } else { Invoke-Install }
