// claimdesk's page script: countdowns, local times, live notices,
// confirmations, keyboard shortcuts and settings, the offline banner, CSRF
// for htmx, copy buttons, the day charts. Small on purpose; the server
// renders everything else. Each concern is a module of js/.
import { startCharts } from "./js/chart.js";
import { startCopy } from "./js/copy.js";
import { startCountdown } from "./js/countdown.js";
import { startCounts } from "./js/counts.js";
import { startForms } from "./js/forms.js";
import { startLive } from "./js/live.js";
import { startLocal } from "./js/local.js";
import { startOffline } from "./js/offline.js";
import { startSettings } from "./js/settings.js";

startForms();
startCopy();
startOffline();
startCountdown();
startLocal();
startCounts();
startCharts();
startSettings();
startLive();
