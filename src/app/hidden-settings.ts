// Celery's filter_hidden_settings (celery/app/utils.py), which `inspect conf`
// and `report` go through, extended to every URL-valued setting: the one
// masking function lives in protocol/secrets.ts.
export { filterHiddenSettings, maskSetting, SETTING_MASK as SECRET_MASK } from '../protocol/index.js'
