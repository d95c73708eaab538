// The keys the app maps to actions, as the platform reports them to ImGui (ImGui 1.86 indexes
// io.KeysDown by the window library's key codes). The app names them here so that it includes no
// window header; app/platform/window.cpp holds each to the window library's own code.
#pragma once

namespace attnviz::app::keys {

inline constexpr int kSpace = 32, kComma = 44, kMinus = 45, kPeriod = 46, kZero = 48, kEqual = 61;
inline constexpr int kO = 79, kS = 83, kLeftBracket = 91, kRightBracket = 93;
inline constexpr int kEscape = 256, kRight = 262, kLeft = 263, kDown = 264, kUp = 265, kPageUp = 266, kPageDown = 267;
inline constexpr int kF5 = 294, kF11 = 300, kKeypadSubtract = 333, kKeypadAdd = 334;

}  // namespace attnviz::app::keys
