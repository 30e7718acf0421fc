// claimdesk's page script: countdowns, local times, live notices,
// confirmations, drafts saved as they are typed, keyboard shortcuts and
// settings, the offline banner, CSRF for htmx, copy buttons, the day
// charts. Small on purpose; the server renders everything else. Each
// concern is a module of js/.
import { startCharts } from "./js/chart.js";
import { startCopy } from "./js/copy.js";
import { startCountdown } from "./js/countdown.js";
import { startDrafts } from "./js/draft.js";
import { startCounts } from "./js/counts.js";
import { startForms } from "./js/forms.js";
import { startLive } from "./js/live.js";
import { startLocal } from "./js/local.js";
import { startOffline } from "./js/offline.js";
import { startSettings } from "./js/settings.js";

startForms();
startDrafts();
startCopy();
startOffline();
startCountdown();
startLocal();
startCounts();
startCharts();
startSettings();
startLive();
