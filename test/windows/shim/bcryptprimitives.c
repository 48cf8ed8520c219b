/* bcryptprimitives.dll for Wine 8, which lacks it: Go's Windows runtime
   loads ProcessPrng from it at start. Built by test/windows with
   x86_64-w64-mingw32-gcc -shared -o bcryptprimitives.dll bcryptprimitives.c -ladvapi32
   and copied into the private Wine prefix's system32, never a user's. */
#include <windows.h>

/* ProcessPrng fills pbData with cbData random bytes, as Windows 10's
   bcryptprimitives.dll does, through advapi32's RtlGenRandom. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData)
{
	while (cbData > 0) {
		ULONG n = cbData > 0x10000000 ? 0x10000000 : (ULONG)cbData;
		if (!SystemFunction036(pbData, n))
			return FALSE;
		pbData += n;
		cbData -= n;
	}
	return TRUE;
}
