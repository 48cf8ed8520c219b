<#
.SYNOPSIS
myriarch site installer for Windows (PowerShell 5.1+): puts a managed OpenTelemetry
Collector on this host.

.DESCRIPTION
The Windows twin of install.sh, with the same flags in PowerShell style (--site-id is
-SiteId). This script only fetches the artifacts, checks the updater's own SHA-256 and
minisign signature, and runs that updater's "setup" command with the flags; the updater
does the rest, the same code the tests run (agent/sitesetup): it checks every flag and
every artifact before the first change, installs the collector (versioned layout under
"$env:ProgramFiles\Myriarch\collector\versions\<v>", "current" switched as a directory
junction, which needs no symlink privilege), the upstream OpAMP Supervisor and
myriarch-updater with its Sigstore verifier beside it, writes their configurations with the
site attribute contract (site.*, deployment.environment.name) and registers the Windows
services otelcol-supervisor and myriarch-updater (restarted on failure).

Problems with the flags are listed as "setup" names them (--site-id for -SiteId).
Re-running with the same flags changes nothing; with changed flags only what differs is
rewritten and only the services whose files changed are restarted.

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
# The flags given, for the functions below (each has its own $PSBoundParameters).
$Given = $PSBoundParameters

if ($Help) {
    Get-Help $PSCommandPath -Detailed
    exit 0
}

function Fail([string]$Message, [int]$Code = 1) {
    [Console]::Error.WriteLine("${Prog}: $Message")
    exit $Code
}

# Native commands run with ErrorActionPreference Continue: under Stop, Windows PowerShell
# 5.1 turns any stderr line of a native command into a terminating error.
function Invoke-Native([string]$Exe, [string[]]$Arguments) {
    $ErrorActionPreference = 'Continue'
    $out = & $Exe @Arguments 2>&1 | Out-String
    return [pscustomobject]@{ Code = $LASTEXITCODE; Output = $out.Trim() }
}

# ---------------------------------------------------------------- what the script checks itself

# Only what it needs to fetch the updater and check its signature; the updater's setup
# checks every flag (and lists every problem) before anything is changed.
$Problems = New-Object System.Collections.Generic.List[string]
foreach ($u in @($Unknown | Where-Object { $_ })) { $Problems.Add("${u}: unknown flag") }
$IsAdmin = ([Security.Principal.WindowsPrincipal][Security.Principal.WindowsIdentity]::GetCurrent()).IsInRole(
    [Security.Principal.WindowsBuiltInRole]::Administrator)
if (-not $Given.ContainsKey('Root') -and -not $IsAdmin) {
    $Problems.Add('must run as Administrator (or install under a prefix with -Root DIR -NoStart)')
}
$Arch = switch ($env:PROCESSOR_ARCHITECTURE) { 'AMD64' { 'amd64' } 'ARM64' { 'arm64' } default { $null } }
if (-not $Arch) { $Problems.Add("unsupported processor architecture $env:PROCESSOR_ARCHITECTURE (supported: AMD64, ARM64)") }
if (-not $Uninstall) {
    if (-not $Artifacts) { $Problems.Add('-Artifacts is required') }
    elseif ($Artifacts -notmatch '^https?://.' -and -not (Test-Path -LiteralPath $Artifacts -PathType Container)) {
        $Problems.Add("-Artifacts ${Artifacts}: neither an http(s) URL nor a directory")
    }
    if (-not $MinisignKey) { $Problems.Add('-MinisignKey is required') }
    if (-not (Get-Command minisign.exe -ErrorAction SilentlyContinue)) {
        $Problems.Add("minisign.exe not found on PATH: needed to check the updater's signature")
    }
}
if ($Problems.Count -gt 0) {
    [Console]::Error.WriteLine("${Prog}: $($Problems.Count) problem(s), nothing was changed:")
    foreach ($p in $Problems) { [Console]::Error.WriteLine("  - $p") }
    [Console]::Error.WriteLine("Run Get-Help .\$Prog -Detailed for the flags.")
    exit 2
}

# ---------------------------------------------------------------- artifacts

# Get-Artifact NAME: NAME from -Artifacts (a directory or an http(s) URL) into the work
# directory.
function Get-Artifact([string]$Name) {
    $dest = Join-Path $Work $Name
    if ($Artifacts -match '^https?://.') {
        $url = $Artifacts.TrimEnd('/') + '/' + $Name
        try { Invoke-WebRequest -UseBasicParsing -Uri $url -OutFile $dest }
        catch { Fail "cannot download ${url}: $($_.Exception.Message); nothing was installed" }
    } else {
        $src = Join-Path $Artifacts $Name
        if (-not (Test-Path -LiteralPath $src -PathType Leaf)) { Fail "artifact $src not found; nothing was installed" }
        Copy-Item -LiteralPath $src -Destination $dest
    }
}

# The updater is the one artifact checked here, with minisign.exe: it is what runs next,
# and it checks every other artifact itself.
function Confirm-Updater([string]$Name) {
    $file = Join-Path $Work $Name
    $want = ((Get-Content -LiteralPath "$file.sha256" -TotalCount 1) -split '\s+')[0].ToLowerInvariant()
    $got = (Get-FileHash -LiteralPath $file -Algorithm SHA256).Hash.ToLowerInvariant()
    if ($want -ne $got) { Fail "artifact ${Name}: SHA-256 mismatch (expected $want, got $got); nothing was installed" }
    $key = $MinisignKey
    if (Test-Path -LiteralPath $key -PathType Leaf) {
        $key = @(Get-Content -LiteralPath $key | Where-Object { $_ -notmatch '^untrusted comment:' -and $_.Trim() }) | Select-Object -First 1
    }
    $r = Invoke-Native 'minisign.exe' @('-V', '-q', '-P', "$key".Trim(), '-m', $file, '-x', "$file.minisig")
    if ($r.Code -ne 0) { Fail "artifact ${Name}: minisign signature does not verify with the given key ($($r.Output)); nothing was installed" }
}

# ---------------------------------------------------------------- the updater's setup

# Get-SetupFlags: this script's flags as "myriarch-updater setup" takes them; the token
# goes through a file readable by SYSTEM and Administrators only, never on a command line.
function Get-SetupFlags {
    $f = New-Object System.Collections.Generic.List[string]
    $map = [ordered]@{ Server = '--server'; SiteId = '--site-id'; SiteType = '--site-type'; SiteName = '--site-name';
        SiteCountry = '--site-country'; SiteRegion = '--site-region'; SiteTimezone = '--site-timezone';
        Environment = '--environment'; Mode = '--mode'; CollectorVersion = '--collector-version';
        MinisignKey = '--minisign-key'; RootKey = '--root-key'; CatalogMirrors = '--catalog-mirrors'; Root = '--root' }
    foreach ($name in $map.Keys) {
        if ($Given.ContainsKey($name) -or $name -eq 'Mode') {
            $f.Add($map[$name]); $f.Add([string](Get-Variable -Name $name -ValueOnly))
        }
    }
    if ($Given.ContainsKey('Token')) {
        $tokenFile = Join-Path $Work 'token'
        [System.IO.File]::WriteAllText($tokenFile, $Token, (New-Object System.Text.UTF8Encoding $false))
        $f.Add('--token-file'); $f.Add($tokenFile)
    } elseif ($TokenFile) { $f.Add('--token-file'); $f.Add($TokenFile) }
    $f.Add('--artifacts'); $f.Add($Work)
    if ($NoStart) { $f.Add('--no-start') }
    if ($DryRun) { $f.Add('--dry-run') }
    return $f
}

$Work = Join-Path ([System.IO.Path]::GetTempPath()) ("myriarch-install." + [guid]::NewGuid().ToString('N'))
[void](New-Item -ItemType Directory -Path $Work)
# The work directory (and the token file in it) is for SYSTEM and Administrators only.
[void](Invoke-Native 'icacls.exe' @($Work, '/inheritance:r', '/grant:r', '*S-1-5-18:(OI)(CI)F', '*S-1-5-32-544:(OI)(CI)F'))
$code = 0
try {
    if ($Uninstall) {
        # A running executable cannot be removed: the installed updater runs from a copy.
        $base = if ($Given.ContainsKey('Root')) { Join-Path $Root 'Program Files\Myriarch' } else { Join-Path $env:ProgramFiles 'Myriarch' }
        $installed = Join-Path $base 'bin\myriarch-updater.exe'
        if (-not (Test-Path -LiteralPath $installed -PathType Leaf)) { Fail "$installed not found: nothing to uninstall" }
        $upd = Join-Path $Work 'myriarch-updater.exe'
        Copy-Item -LiteralPath $installed -Destination $upd
        $f = @('setup', '--uninstall')
        if ($Purge) { $f += '--purge' }
        if ($Given.ContainsKey('Root')) { $f += @('--root', $Root) }
        if ($NoStart) { $f += '--no-start' }
        if ($DryRun) { $f += '--dry-run' }
    } else {
        if ($Purge) { Fail '-Purge only goes with -Uninstall' 2 }
        $names = @("myriarch-updater_windows_$Arch.exe", "myriarch-sigstore_windows_$Arch.exe")
        # Without -CollectorVersion, setup says it is required (with every other problem).
        if ($Mode -eq 'binary' -and $CollectorVersion) {
            $names += @("otelcol_$($CollectorVersion -replace '^v', '')_windows_$Arch.zip", "opampsupervisor_windows_$Arch.exe")
        }
        foreach ($n in $names) { foreach ($x in @('', '.sha256', '.minisig')) { Get-Artifact "$n$x" } }
        Confirm-Updater $names[0]
        $upd = Join-Path $Work $names[0]
        $f = @('setup') + (Get-SetupFlags)
    }
    & $upd @f
    $code = $LASTEXITCODE
} finally {
    Remove-Item -LiteralPath $Work -Recurse -Force -ErrorAction SilentlyContinue
}
exit $code
