#ifndef AUDIOGATE_CSODIUM_SHIM_H
#define AUDIOGATE_CSODIUM_SHIM_H
#include <sodium/core.h>
#include <sodium/crypto_core_ed25519.h>
#include <sodium/crypto_scalarmult_ed25519.h>
#include <sodium/crypto_sign_ed25519.h>
#endif
