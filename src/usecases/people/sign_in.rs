//! Signing in: password, lockout, two-step codes and enrolment.
